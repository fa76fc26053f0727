#!/bin/bash
# CPU time per thread of a program, split into the writer thread (`calltime-writer`) and the program's own threads
# (docs/performance.md, "Ninth round"): each command runs RUNS times, the commands alternating, with a small
# LD_PRELOAD library (compiled here with cc) that reads every live thread's CPU time (user + system, ns, from
# /proc/self/task/<tid>/schedstat) after the program's exit handlers ran: the runtime's exit flush is on the
# program's thread, the writer thread's whole life on its own. Prints per command the medians in ms: the program's
# threads, the writer, and all of them. A thread that ended before exit (a rayon worker does not) is not counted.
#
# usage: RUNS=N scripts/thread-cpu.sh NAME="COMMAND ARGS" [NAME="COMMAND ARGS" ...]   (RUNS default 20)
#        CALLTIME_OUT is set to a scratch file unless given.
set -euo pipefail
runs=${RUNS:-20}
[ $# -gt 0 ] || { echo "usage: scripts/thread-cpu.sh NAME=\"COMMAND ARGS\" ..." >&2; exit 1; }
command -v cc >/dev/null || { echo "thread-cpu: a C compiler (cc) is needed for the LD_PRELOAD helper" >&2; exit 1; }
out=$(mktemp -d /tmp/thread-cpu.XXXXXX)
export CALLTIME_OUT=${CALLTIME_OUT:-$out/scratch.trace}
cat > "$out/threadcpu.c" <<'C'
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* Runs after the program's atexit handlers (this library's constructor ran first): one line per live thread. */
__attribute__((destructor)) static void threadcpu_report(void) {
    const char *out = getenv("THREADCPU_OUT");
    FILE *o = out ? fopen(out, "a") : NULL;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    if (!o || !d) return;
    while ((e = readdir(d))) {
        char path[128], comm[64] = "?";
        unsigned long long ns = 0;
        FILE *f;
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        if ((f = fopen(path, "r"))) { if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = 0; fclose(f); }
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        if ((f = fopen(path, "r"))) { if (fscanf(f, "%llu", &ns) != 1) ns = 0; fclose(f); }
        fprintf(o, "%s %llu\n", comm, ns);
    }
    closedir(d);
    fprintf(o, "--\n");
    fclose(o);
}
C
cc -O2 -shared -fPIC -o "$out/threadcpu.so" "$out/threadcpu.c"
for run in $(seq "$runs"); do
  for spec in "$@"; do
    name=${spec%%=*} command=${spec#*=}
    THREADCPU_OUT=$out/$name.$run LD_PRELOAD=$out/threadcpu.so sh -c "exec $command" > /dev/null
  done
done
for spec in "$@"; do
  name=${spec%%=*}
  cat "$out/$name".* | awk -v name="$name" '
    /^--$/ { p[n] = prog; w[n] = writer; n++; prog = 0; writer = 0; next }
    $1 == "calltime-writer" { writer += $2 / 1e6; next }
    { prog += $2 / 1e6 }
    function median(a, n,   i, j, t, b) { for (i = 0; i < n; i++) b[i] = a[i]
      for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
      return n % 2 ? b[int(n / 2)] : (b[n / 2 - 1] + b[n / 2]) / 2 }
    END { for (i = 0; i < n; i++) t[i] = p[i] + w[i]
      printf "%-14s program threads %8.2f ms   writer %6.2f ms   all %8.2f ms   (medians of %d)\n", name, median(p, n), median(w, n), median(t, n), n }'
done
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC'); files in $out"
