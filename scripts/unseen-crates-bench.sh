#!/bin/bash
# docs/performance.md's "Unseen programs (default plan, first run)": five crates.io programs the tool was not tuned
# on, each a tiny bench binary in a workspace of the crate's own source, and an async loopback server on tokio (ae), instrumented as the README says (`cargo
# calltime --root R --depth 5`, no other flag, fresh calltime target dir) and built plainly. For each it prints:
# whether stdout is byte-identical, the wall and CPU ratios (alternating runs), the instruction ratio (callgrind,
# when valgrind is installed), and the root's tree mean against the plain build's own `Instant` timing of the same
# call (each bench binary prints `truth <path> <mean ns> <calls>` on stderr; scripts/root-mean.py compares the root's).
# A measurement: it exits non-zero only when it cannot set up (fetch, copy or build fails).
#
# usage: scripts/unseen-crates-bench.sh [WORK_DIR]   (default /tmp/unseen-crates-bench; kept between runs so that
#        the plain builds are reused; the instrumented builds are always redone from scratch)
#        CALLTIME_CC=PATH measures that cargo-calltime binary; ONLY="tm rx" runs only those programs (tm toml_edit,
#        rx regex, qx quick-xml, mz miniz_oxide, hp httparse, ae the tokio server; cs csv, sq sqlparser, sv semver,
#        sh sha2, lz lz4_flex, nm a nom parser; pt a pest_derive JSON grammar, te tera, ur url, si similar, wn a
#        winnow parser, jf jiff; hy a hyper server, cb ciborium, tw textwrap, pg petgraph, pn png, ry rayon in the
#        program's own code; ac aho-corasick, us unicode-segmentation, bc bincode, ax async-executor tasks across
#        two threads, hb handlebars; yr yaml-rust2, md markdown (markdown-rs), rd rustc-demangle, ch chrono, sl
#        rusqlite with the bundled SQLite);
#        RUNS=N side-by-side runs per program (default 10); NO_CALLGRIND=1 skips the instruction counts;
#        REUSE_BUILDS=1 measures the binaries an earlier run left in WORK_DIR (sqlparser's instrumented build takes
#        15 minutes at load 15); EXTRA_PLANS=1 also builds `--depth 8` and checks the trees of `--exact` and depth 8
#        runs (placement-check.py, call counts against exact), EXTRA_PLANS=only does only that.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/unseen-crates-bench}
runs=${RUNS:-10}
only=${ONLY:-tm rx qx mz hp ae cs sq sv sh lz nm pt te ur si wn jf hy cb tw pg pn ry ac us bc ax hb yr md rd ch sl}
fail() { echo "unseen-crates-bench: $*" >&2; exit 1; }
mkdir -p "$work" || fail "cannot create the work directory $work"
work=$(cd "$work" && pwd)
command -v python3 >/dev/null || fail "python3 is needed for the run loop and the comparison; install it"

echo "== setup (work dir $work)"
. "$repo/scripts/bench-tool.sh"   # sets CC: CALLTIME_CC, or this checkout's tool
crates="toml_edit@0.25.20 toml_parser@1.1.6 quick-xml@0.41.0 miniz_oxide@0.9.1 httparse@1.10.1 regex@1.13.2
  regex-automata@0.4.19 regex-syntax@0.8.12 csv@1.4.0 csv-core@0.1.13 sqlparser@0.64.0 semver@1.0.28 sha2@0.10.8
  digest@0.10.7 lz4_flex@0.14.2 nom@8.0.0 pest@2.9.6 pest_derive@2.9.6 tera@1.20.1 url@2.5.8 similar@2.7.0
  winnow@0.7.15 jiff@1.0.2 jiff-core@1.0.1 ciborium@0.2.2 ciborium-io@0.2.2 ciborium-ll@0.2.2
  textwrap@0.16.4 petgraph@0.8.3 png@0.18.1 aho-corasick@1.1.5 unicode-segmentation@1.13.3 bincode@1.3.3
  async-executor@1.14.1 async-task@4.7.1 handlebars@4.5.0 yaml-rust2@0.13.1 markdown@1.0.0 rustc-demangle@0.1.28
  chrono@0.4.45 rusqlite@0.40.2"
registry() { ls -d "$HOME"/.cargo/registry/src/*/"$1"-[0-9]* 2>/dev/null | grep -F -- "-$2" | head -1 || true; }
missing=0
for spec in $crates; do [ -n "$(registry "${spec%@*}" "${spec#*@}")" ] || missing=1; done
if [ "$missing" = 1 ]; then
  rm -rf "$work/fetch" && cargo new -q "$work/fetch" || fail "cannot create $work/fetch"
  for spec in $crates; do (cd "$work/fetch" && cargo add -q "$spec") || fail "cannot add $spec in $work/fetch"; done
  (cd "$work/fetch" && cargo fetch -q) || fail "cannot fetch the crates from crates.io (cargo fetch in $work/fetch)"
fi
# workspace DIR BENCH CRATE@VERSION...: the crates' sources as members (later ones patched in for the first), and a
# bench binary package BENCH depending on the first.
workspace() {
  local dir=$1 bench=$2 first="" members="" patch=""; shift 2
  mkdir -p "$dir/$bench/src"
  for spec in "$@"; do
    local name=${spec%@*} version=${spec#*@}
    [ -d "$dir/$name" ] || cp -r "$(registry "$name" "$version")" "$dir/$name" || fail "cannot copy $spec"
    members="$members\"$name\", "
    if [ -z "$first" ]; then first=$name; else patch="$patch$name = { path = \"$name\" }\n"; fi
  done
  printf "[workspace]\nmembers = [$members\"$bench\"]\nresolver = \"2\"\n[profile.release]\ndebug = 1\n" > "$dir/Cargo.toml"
  [ -z "$patch" ] || printf "[patch.crates-io]\n$patch" >> "$dir/Cargo.toml"
  printf "[package]\nname = \"$bench\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\n$first = { path = \"../$first\" }\n" \
    > "$dir/$bench/Cargo.toml"
  cat > "$dir/$bench/src/main.rs"
}

# The Rust function the compression benches share: `generated_text(len, seed)`, words and numbers from a seeded LCG;
# appended to a bench's main.rs after `workspace` wrote it.
generated_text_rs() {
  cat <<'RS'

/// At least `len` bytes of words and numbers, the same for the same seed.
fn generated_text(len: usize, seed: u64) -> Vec<u8> {
    let mut data = Vec::with_capacity(len);
    let mut state = seed;
    while data.len() < len {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let word = ["alpha", "beta", "gamma", "delta", "calltime", "probe", "tree", "node"][(state >> 60) as usize % 8];
        data.extend_from_slice(word.as_bytes());
        data.push(if state & 0xf == 0 { b'\n' } else { b' ' });
        data.extend_from_slice(format!("{}", (state >> 40) % 1000).as_bytes());
    }
    data
}
RS
}

# The `main` the document parsers share (nom, pest): parses `count` documents made by the bench's
# `document(seed)` with its `parse_document`, timing each call, and prints the mean for root-mean.py.
document_main_rs() {
  cat <<RS

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    let (mut total, mut spent) = (0usize, Duration::ZERO);
    for seed in 0..count {
        let text = document(seed);
        let started = Instant::now();
        total += parse_document(&text);
        spent += started.elapsed();
    }
    println!("{count} documents, {total} leaves");
    eprintln!("truth $1::parse_document {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
}

# toml_edit: one `Document::parse` per document, 150 generated documents of about 40 KB.
workspace "$work/tm" tmbench toml_edit@0.25.20 toml_parser@1.1.6 <<'RS'
use std::fmt::Write;
use std::time::{Duration, Instant};

fn document(seed: usize) -> String {
    let mut text = String::from("# generated\ntitle = \"bench\"\n");
    for t in 0..120 {
        let _ = write!(text, "\n[server_{seed}_{t}]\nname = \"host-{t} \\\"quoted\\\" \\u00e9\"\nport = {}\n", 8000 + t);
        let _ = write!(text, "ratio = {}.{}\nenabled = {}\nstarted = 2026-11-{:02}T10:{:02}:00Z\n", t, seed % 97, t % 2 == 0, 1 + t % 28, t % 60);
        let _ = write!(text, "tags = [\"a{t}\", \"b\", 'literal', {t}, {}.5]\n", t * 3);
        let _ = write!(text, "limits = {{ cpu = {t}, mem = \"{}Mi\", nested = {{ x = 1, y = [1, 2, 3] }} }}\n", t * 64);
        let _ = write!(text, "description = \"\"\"\nline one of {t}\nline two\"\"\"\n[[server_{seed}_{t}.route]]\npath = \"/r/{t}\"\n");
    }
    text
}

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(150);
    let (mut keys, mut bytes, mut spent) = (0usize, 0usize, Duration::ZERO);
    for seed in 0..count {
        let text = document(seed);
        let started = Instant::now();
        let parsed = toml_edit::Document::parse(text.as_str());
        spent += started.elapsed();
        let document = parsed.expect("generated TOML parses").into_mut();
        keys += document.as_table().len();
        bytes += document.to_string().len();
    }
    println!("{count} documents, {keys} top-level keys, {bytes} bytes printed");
    eprintln!("truth toml_edit::document::Document::parse {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS

# regex: one `Regex::new` per pattern (40 patterns, compiled 10 times each), each then counting its matches in a
# 100 KB text (matching is not under the root).
workspace "$work/rx" rxbench regex@1.13.2 regex-automata@0.4.19 regex-syntax@0.8.12 <<'RS'
use std::time::{Duration, Instant};

const PATTERNS: &[&str] = &[
    r"\b\w+@\w+\.\w+\b", r"(?i)error|warning|fatal", r"\d{4}-\d{2}-\d{2}", r"[A-Z][a-z]+ [A-Z][a-z]+",
    r"^\s*(fn|pub fn)\s+(\w+)", r"(\w+)=(\d+)", r"https?://[^\s]+", r"\p{Greek}+", r"(?m)^#+ .*$",
    r"[[:alpha:]]{12,}", r"(a|b|c|d|e)+f", r"\b(?:the|a|an)\b", r"0x[0-9a-fA-F]+", r"(\d+)\.(\d+)\.(\d+)",
    r"(?s)/\*.*?\*/", r"[^aeiou\s]{5}", r"\bfoo(bar)?baz\b", r"(?x) \d+ \s* (?: ms | us | ns )", r"\W{3,}",
    r"(?i)\bcalltime\b", r"[\u{400}-\u{4ff}]+", r"(ab|cd|ef|gh|ij|kl|mn|op|qr|st|uv|wx|yz){2,}", r"\$\{[^}]*\}",
    r"^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$", r"\b[a-z]+ing\b", r"<[^>]+>", r"\[(\w+)\]\((\S+)\)",
    r"(?i)[aeiou]{3}", r"\s+$", r"(\w)\w*\s+(\w)\w*", r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*",
    r"\d+(?:,\d{3})*", r"'[^']*'", r#""(?:[^"\\]|\\.)*""#, r"(?U)a.+b", r"\b\d{3}-\d{4}\b",
    r"[\p{Lu}\p{Lt}]\p{Ll}+", r"(one|two|three|four|five|six|seven|eight|nine|ten)", r"\.\.\.|…", r"(?i)z{2,}",
];

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    let mut text = String::new();
    for i in 0..1500 {
        text.push_str(&format!("line {i}: The Quick fox=42 sent mail to bob@example.com on 2026-11-{:02} (0x{i:x}) ",
            1 + i % 28));
        text.push_str("https://example.org/x ... ERROR calltime 3.14.15 'quoted' \"str\\\"ing\" αβγ пример\n");
    }
    let (mut matches, mut spent, mut calls) = (0usize, Duration::ZERO, 0usize);
    for _ in 0..rounds {
        for pattern in PATTERNS {
            let started = Instant::now();
            let compiled = regex::Regex::new(pattern);
            spent += started.elapsed();
            calls += 1;
            matches += compiled.expect("valid pattern").find_iter(&text).count();
        }
    }
    println!("{calls} compilations, {matches} matches");
    eprintln!("truth regex::regex::string::Regex::new {} {calls}", spent.as_nanos() as f64 / calls as f64);
}
RS

# quick-xml: one `count_events` (the program's own per-document function) per document, 400 generated documents
# of about 30 KB.
workspace "$work/qx" qxbench quick-xml@0.41.0 <<'RS'
use quick_xml::events::Event;
use quick_xml::Reader;
use std::fmt::Write;
use std::time::{Duration, Instant};

fn document(seed: usize) -> String {
    let mut xml = String::from("<?xml version=\"1.0\"?>\n<catalog>\n");
    for i in 0..150 {
        let _ = write!(xml, "  <book id=\"b{seed}-{i}\" lang=\"en\" available=\"{}\">\n    <title>Book &amp; {i}</title>\n",
            i % 3 == 0);
        let _ = write!(xml, "    <author first=\"A{i}\" last=\"B{seed}\"/>\n    <price currency=\"EUR\">{}.{:02}</price>\n",
            i * 7 % 100, i % 100);
        let _ = write!(xml, "    <!-- note {i} -->\n    <desc><![CDATA[some <raw> text {i}]]> and more &lt;text&gt;</desc>\n  </book>\n");
    }
    xml.push_str("</catalog>\n");
    xml
}

/// Counts the elements, attributes and text bytes of one document.
fn count_events(xml: &str) -> (usize, usize, usize) {
    let mut reader = Reader::from_str(xml);
    let (mut elements, mut attributes, mut text) = (0, 0, 0);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => {
                elements += 1;
                for attribute in e.attributes() {
                    let attribute = attribute.expect("well-formed attribute");
                    attributes += attribute.unescape_value().map_or(0, |v| v.len().min(1));
                }
            }
            Ok(Event::Text(e)) => text += e.decode().map_or(0, |t| t.len()),
            Ok(Event::CData(e)) => text += e.len(),
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(error) => panic!("generated XML is well-formed: {error}"),
        }
    }
    (elements, attributes, text)
}

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(400);
    let (mut totals, mut spent) = ((0, 0, 0), Duration::ZERO);
    for seed in 0..count {
        let xml = document(seed);
        let started = Instant::now();
        let (e, a, t) = count_events(&xml);
        spent += started.elapsed();
        totals = (totals.0 + e, totals.1 + a, totals.2 + t);
    }
    println!("{count} documents: {} elements, {} attributes, {} text bytes", totals.0, totals.1, totals.2);
    eprintln!("truth qxbench::count_events {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS

# miniz_oxide: one `compress_to_vec` (level 6) per 64 KB chunk of 8 MB of generated text, each chunk decompressed
# again to check it (not under the root).
workspace "$work/mz" mzbench miniz_oxide@0.9.1 <<'RS'
use std::time::{Duration, Instant};

fn main() {
    let chunks: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(128);
    let data = generated_text(chunks * 65536, 11);
    let (mut compressed, mut spent) = (0usize, Duration::ZERO);
    for chunk in data.chunks(65536).take(chunks) {
        let started = Instant::now();
        let packed = miniz_oxide::deflate::compress_to_vec(chunk, 6);
        spent += started.elapsed();
        compressed += packed.len();
        let unpacked = miniz_oxide::inflate::decompress_to_vec(&packed).expect("round trip");
        assert_eq!(unpacked, chunk, "round trip");
    }
    println!("{chunks} chunks, {compressed} bytes compressed");
    eprintln!("truth miniz_oxide::deflate::compress_to_vec {} {chunks}", spent.as_nanos() as f64 / chunks as f64);
}
RS
generated_text_rs >> "$work/mz/mzbench/src/main.rs"

# httparse: one `Request::parse` per request, 300,000 requests (16 shapes of 200-700 bytes).
workspace "$work/hp" hpbench httparse@1.10.1 <<'RS'
use std::time::{Duration, Instant};

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300_000);
    let requests: Vec<String> = (0..16)
        .map(|i| {
            let mut request = format!("{} /api/v{i}/items/{}?page={i}&q=calltime HTTP/1.1\r\nHost: example.org\r\n",
                ["GET", "POST", "PUT", "DELETE"][i % 4], i * 37);
            for h in 0..(4 + i) {
                request.push_str(&format!("X-Header-{h}: value-{h}-{}\r\n", "v".repeat(h * 3)));
            }
            request.push_str("Accept: */*\r\nUser-Agent: unseen-bench/1.0\r\n\r\n");
            request
        })
        .collect();
    let (mut header_count, mut path_bytes, mut spent) = (0usize, 0usize, Duration::ZERO);
    for i in 0..count {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut request = httparse::Request::new(&mut headers);
        let bytes = requests[i % requests.len()].as_bytes();
        let started = Instant::now();
        let status = request.parse(bytes);
        spent += started.elapsed();
        assert!(status.expect("valid request").is_complete());
        header_count += request.headers.len();
        path_bytes += request.path.map_or(0, str::len);
    }
    println!("{count} requests, {header_count} headers, {path_bytes} path bytes");
    eprintln!("truth httparse::Request::parse {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS

# An async loopback server (tokio 1, the program's own code): one `handle` per request, 20,000 length-prefixed
# requests from a client thread in the same process over 127.0.0.1 (bounded: it stops after the last reply).
mkdir -p "$work/ae/aebench/src"
printf '[workspace]\nmembers = ["aebench"]\nresolver = "2"\n[profile.release]\ndebug = 1\n' > "$work/ae/Cargo.toml"
printf '[package]\nname = "aebench"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\ntokio = { version = "1.54", features = ["rt", "net", "io-util"] }\n' \
  > "$work/ae/aebench/Cargo.toml"
cat > "$work/ae/aebench/src/main.rs" <<'RS'
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Serves one request on `stream`: a length-prefixed message, answered with its words reversed and a checksum.
/// False at the end of the stream.
async fn handle(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut len = [0u8; 4];
    if stream.read_exact(&mut len).await.is_err() {
        return Ok(false);
    }
    buf.resize(u32::from_le_bytes(len) as usize, 0);
    stream.read_exact(buf).await?;
    let reply = respond(buf);
    stream.write_all(&(reply.len() as u32).to_le_bytes()).await?;
    stream.write_all(&reply).await?;
    Ok(true)
}

fn respond(request: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(request);
    let mut reply: Vec<u8> = text.split(' ').rev().collect::<Vec<_>>().join(" ").into_bytes();
    reply.extend_from_slice(format!(" #{}", checksum(request)).as_bytes());
    reply
}

fn checksum(bytes: &[u8]) -> u32 {
    bytes.iter().fold(2166136261u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(16777619))
}

fn client(port: u16, requests: usize) -> u64 {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the loopback server");
    stream.set_nodelay(true).expect("nodelay");
    let mut total = 0u64;
    let mut reply = Vec::new();
    for i in 0..requests {
        let message = format!("request {i} asks for words {} in reverse order please", i * 7 % 1000);
        stream.write_all(&(message.len() as u32).to_le_bytes()).expect("send");
        stream.write_all(message.as_bytes()).expect("send");
        let mut len = [0u8; 4];
        stream.read_exact(&mut len).expect("reply length");
        reply.resize(u32::from_le_bytes(len) as usize, 0);
        stream.read_exact(&mut reply).expect("reply");
        total += u64::from(checksum(&reply));
    }
    total
}

fn main() {
    let requests: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build().expect("tokio runtime");
    let (served, spent) = runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local address").port();
        let client = std::thread::spawn(move || client(port, requests));
        let (mut stream, _) = listener.accept().await.expect("accept");
        stream.set_nodelay(true).expect("nodelay");
        let (mut served, mut spent, mut buf) = (0usize, Duration::ZERO, Vec::new());
        loop {
            let started = Instant::now();
            let more = handle(&mut stream, &mut buf).await.expect("serve");
            if !more {
                break;
            }
            spent += started.elapsed();
            served += 1;
        }
        println!("client checksum total {}", client.join().expect("client thread"));
        (served, spent)
    });
    println!("{served} requests served");
    eprintln!("truth aebench::handle {} {served}", spent.as_nanos() as f64 / served.max(1) as f64);
}
RS

# csv: one `Reader::read_record` per record (the per-record call a reader loop makes), 200,000 generated records
# of 7 fields (quoted fields, escaped quotes) read from memory.
workspace "$work/cs" csbench csv@1.4.0 csv-core@0.1.13 <<'RS'
use std::fmt::Write;
use std::time::{Duration, Instant};

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let mut data = String::from("id,name,city,amount,ratio,note,flag\n");
    for i in 0..count {
        let _ = writeln!(data, "{i},\"Name {i}, Jr.\",City{},{},{}.{:03},\"say \"\"hi\"\" to {}\",{}", i % 97,
            i * 31 % 100_000, i % 13, i % 1000, i % 7, i % 2 == 0);
    }
    let mut reader = csv::Reader::from_reader(data.as_bytes());
    let mut record = csv::StringRecord::new();
    let (mut records, mut fields, mut total, mut spent) = (0usize, 0usize, 0u64, Duration::ZERO);
    loop {
        let started = Instant::now();
        let more = reader.read_record(&mut record);
        spent += started.elapsed();
        if !more.expect("well-formed CSV") {
            break;
        }
        records += 1;
        fields += record.len();
        total += record.get(3).and_then(|a| a.parse::<u64>().ok()).unwrap_or(0);
    }
    println!("{records} records, {fields} fields, amount total {total}");
    // The last call (end of input) is timed too: records + 1 calls.
    eprintln!("truth csv::reader::Reader::read_record {} {}", spent.as_nanos() as f64 / (records + 1) as f64,
        records + 1);
}
RS

# sqlparser: one `Parser::parse_sql` per statement (recursive descent), 6,000 generated statements of 8 shapes.
workspace "$work/sq" sqbench sqlparser@0.64.0 <<'RS'
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use std::time::{Duration, Instant};

fn statement(i: usize) -> String {
    match i % 8 {
        0 => format!("SELECT a.id, b.name, SUM(a.v{i} * 2 + 1) AS total FROM t{i} a JOIN u b ON a.id = b.id \
              WHERE a.x > {i} AND (b.y < 3 OR b.z IN (1, 2, 3)) GROUP BY a.id, b.name HAVING COUNT(*) > 1 \
              ORDER BY total DESC LIMIT 10"),
        1 => format!("INSERT INTO log{i} (id, msg, at) VALUES ({i}, 'message {i}', '2026-11-27'), ({}, 'x', NULL)",
              i + 1),
        2 => format!("UPDATE accounts SET balance = balance - {i}, updated = CURRENT_TIMESTAMP WHERE id = {i} \
              AND balance >= {i}"),
        3 => format!("CREATE TABLE t{i} (id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, score DOUBLE DEFAULT 0.5, \
              created TIMESTAMP, CONSTRAINT u{i} UNIQUE (name))"),
        4 => format!("SELECT CASE WHEN x > {i} THEN 'big' WHEN x > 10 THEN 'mid' ELSE 'small' END, \
              COALESCE(y, z, 0) FROM (SELECT x, y, z FROM s WHERE w LIKE '%{i}%') AS sub"),
        5 => format!("WITH r AS (SELECT id, parent FROM tree WHERE id = {i}) SELECT * FROM r \
              WHERE EXISTS (SELECT 1 FROM other o WHERE o.id = r.parent)"),
        6 => format!("DELETE FROM sessions WHERE last_seen < NOW() - INTERVAL '{i} days' OR user_id IS NULL"),
        _ => format!("SELECT ((((a + b) * (c - d)) / (e + {i})) % 7) + f(g(h(1, 2), 3), 4) FROM nums"),
    }
}

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(6000);
    let statements: Vec<String> = (0..count).map(statement).collect();
    let dialect = GenericDialect {};
    let (mut parsed, mut printed, mut spent) = (0usize, 0usize, Duration::ZERO);
    for sql in &statements {
        let started = Instant::now();
        let ast = Parser::parse_sql(&dialect, sql);
        spent += started.elapsed();
        let ast = ast.expect("generated SQL parses");
        parsed += ast.len();
        printed += ast.iter().map(|s| s.to_string().len()).sum::<usize>();
    }
    println!("{parsed} statements, {printed} bytes printed back");
    eprintln!("truth sqlparser::parser::Parser::parse_sql {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS

# semver: one `VersionReq::parse` per requirement, 200,000 requirements of 12 shapes, each matched against a
# version (not under the root).
workspace "$work/sv" svbench semver@1.0.28 <<'RS'
use std::time::{Duration, Instant};

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let shapes = ["^1.2.3", ">=1.0, <2.0.0", "~0.4", "=3.1.4-alpha.1", "*", "1.x", ">1.2.3-rc.1, <=1.9",
        "^0.0.7", "~1.2.3-beta+build.5", ">= 2.1, < 3, != 2.5.0", "0.9.*", "<4.0.0-0"];
    let requirements: Vec<String> = (0..count).map(|i| shapes[i % shapes.len()].replace("!= 2.5.0", "<2.9")).collect();
    let version = semver::Version::parse("1.5.0").expect("version");
    let (mut matching, mut comparators, mut spent) = (0usize, 0usize, Duration::ZERO);
    for text in &requirements {
        let started = Instant::now();
        let requirement = semver::VersionReq::parse(text);
        spent += started.elapsed();
        let requirement = requirement.expect("valid requirement");
        comparators += requirement.comparators.len();
        matching += usize::from(requirement.matches(&version));
    }
    println!("{count} requirements, {comparators} comparators, {matching} match 1.5.0");
    eprintln!("truth semver::VersionReq::parse {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS

# sha2: the program's own `digest_chunk` (new, update, finalize through digest's traits) per 16 KB chunk, 4,096
# chunks (64 MB).
workspace "$work/sh" shbench sha2@0.10.8 digest@0.10.7 <<'RS'
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};

/// The SHA-256 of one chunk.
fn digest_chunk(chunk: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(chunk);
    hasher.finalize().into()
}

fn main() {
    let chunks: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(4096);
    let data: Vec<u8> = (0..chunks * 16384).map(|i| (i as u32).wrapping_mul(2654435761) as u8 ^ (i >> 12) as u8).collect();
    let (mut folded, mut spent) = ([0u8; 32], Duration::ZERO);
    for chunk in data.chunks(16384) {
        let started = Instant::now();
        let hash = digest_chunk(chunk);
        spent += started.elapsed();
        // Rotated before each xor: the data repeats every 64 chunks, and a plain xor of pairs would cancel to zero.
        for (f, h) in folded.iter_mut().zip(hash) {
            *f = f.rotate_left(3) ^ h;
        }
    }
    let hex: String = folded.iter().map(|b| format!("{b:02x}")).collect();
    println!("{chunks} chunks, folded hash {hex}");
    eprintln!("truth shbench::digest_chunk {} {chunks}", spent.as_nanos() as f64 / chunks as f64);
}
RS

# lz4_flex: one `compress_prepend_size` per 64 KB chunk of 16 MB of generated text (safe encoder, the default),
# each chunk decompressed again to check it (not under the root).
workspace "$work/lz" lzbench lz4_flex@0.14.2 <<'RS'
use std::time::{Duration, Instant};

fn main() {
    let chunks: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(256);
    let data = generated_text(chunks * 65536, 7);
    let (mut compressed, mut spent) = (0usize, Duration::ZERO);
    for chunk in data.chunks(65536).take(chunks) {
        let started = Instant::now();
        let packed = lz4_flex::compress_prepend_size(chunk);
        spent += started.elapsed();
        compressed += packed.len();
        let unpacked = lz4_flex::decompress_size_prepended(&packed).expect("round trip");
        assert_eq!(unpacked, chunk, "round trip");
    }
    println!("{chunks} chunks, {compressed} bytes compressed");
    eprintln!("truth lz4_flex::block::compress::compress_prepend_size {} {chunks}",
        spent.as_nanos() as f64 / chunks as f64);
}
RS
generated_text_rs >> "$work/lz/lzbench/src/main.rs"

# nom 8: the program's own JSON-like parser built from nom's combinators (recursive `value`), one `parse_document`
# per document, 300 generated documents of about 25 KB.
workspace "$work/nm" nmbench nom@8.0.0 <<'RS'
use nom::branch::alt;
use nom::bytes::complete::take_while;
use nom::character::complete::{char, digit1, multispace0};
use nom::combinator::{map, map_res, opt, recognize};
use nom::multi::separated_list0;
use nom::sequence::{delimited, pair, separated_pair};
use nom::{IResult, Parser};
use std::fmt::Write;
use std::time::{Duration, Instant};

enum Value {
    Number(i64),
    Text(String),
    List(Vec<Value>),
    Object(Vec<(String, Value)>),
}

fn ws<'a, P>(inner: P) -> impl Parser<&'a str, Output = P::Output, Error = nom::error::Error<&'a str>>
where
    P: Parser<&'a str, Error = nom::error::Error<&'a str>>,
{
    delimited(multispace0, inner, multispace0)
}

fn number(input: &str) -> IResult<&str, Value> {
    map_res(recognize(pair(opt(char('-')), digit1)), |s: &str| s.parse::<i64>().map(Value::Number)).parse(input)
}

fn text(input: &str) -> IResult<&str, String> {
    map(delimited(char('"'), take_while(|c| c != '"'), char('"')), String::from).parse(input)
}

fn list(input: &str) -> IResult<&str, Value> {
    map(delimited(char('['), separated_list0(char(','), ws(value)), char(']')), Value::List).parse(input)
}

fn member(input: &str) -> IResult<&str, (String, Value)> {
    separated_pair(ws(text), char(':'), ws(value)).parse(input)
}

fn object(input: &str) -> IResult<&str, Value> {
    map(delimited(char('{'), separated_list0(char(','), ws(member)), char('}')), Value::Object).parse(input)
}

fn value(input: &str) -> IResult<&str, Value> {
    alt((number, map(text, Value::Text), list, object)).parse(input)
}

fn leaves(value: &Value) -> usize {
    match value {
        Value::Number(number) => 1 + usize::from(*number < 0),
        Value::Text(text) => 1 + usize::from(text.is_empty()),
        Value::List(items) => items.iter().map(leaves).sum(),
        Value::Object(members) => members.iter().map(|(_, v)| leaves(v)).sum(),
    }
}

/// Parses one document and counts its leaves.
fn parse_document(document: &str) -> usize {
    let (rest, parsed) = ws(value).parse(document).expect("generated document parses");
    assert!(rest.is_empty(), "whole document parsed");
    leaves(&parsed)
}

fn document(seed: usize) -> String {
    let mut text = String::from("{\n");
    for i in 0..120 {
        let _ = write!(text, "  \"item{i}\": {{ \"id\": {}, \"name\": \"thing {seed}-{i}\", \"tags\": [\"a\", \"b{i}\", {}],",
            seed * 1000 + i, i % 7);
        let _ = write!(text, " \"dims\": [[{i}, -{i}], [1, 2, 3], []], \"meta\": {{ \"x\": {}, \"y\": \"z\" }} }}{}\n",
            i * 3, if i + 1 < 120 { "," } else { "" });
    }
    text.push('}');
    text
}
RS
document_main_rs nmbench >> "$work/nm/nmbench/src/main.rs"

# pest 2 with pest_derive: a JSON grammar's generated parser (`#[derive(Parser)]`), the program's own
# `parse_document` (parse, then a recursive walk of the pairs) per document, 300 generated documents of about 20 KB.
workspace "$work/pt" ptbench pest@2.9.6 <<'RS'
use pest::iterators::Pair;
use pest::Parser;
use pest_derive::Parser;
use std::fmt::Write;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[grammar_inline = r#"
WHITESPACE = _{ " " | "\t" | "\r" | "\n" }
json = _{ SOI ~ (object | array) ~ EOI }
object = { "{" ~ "}" | "{" ~ pair ~ ("," ~ pair)* ~ "}" }
pair = { string ~ ":" ~ value }
array = { "[" ~ "]" | "[" ~ value ~ ("," ~ value)* ~ "]" }
value = _{ object | array | string | number | boolean | null }
boolean = { "true" | "false" }
null = { "null" }
string = ${ "\"" ~ inner ~ "\"" }
inner = @{ char* }
char = { !("\"" | "\\") ~ ANY | "\\" ~ ("\"" | "\\" | "/" | "b" | "f" | "n" | "r" | "t") | "\\" ~ ("u" ~ ASCII_HEX_DIGIT{4}) }
number = @{ "-"? ~ ("0" | ASCII_NONZERO_DIGIT ~ ASCII_DIGIT*) ~ ("." ~ ASCII_DIGIT*)? ~ (^"e" ~ ("+" | "-")? ~ ASCII_DIGIT+)? }
"#]
struct JsonParser;

fn leaves(pair: Pair<Rule>) -> usize {
    match pair.as_rule() {
        Rule::object | Rule::array | Rule::pair => pair.into_inner().map(leaves).sum(),
        Rule::string => 1 + pair.as_str().len() / 16,
        _ => 1,
    }
}

/// Parses one document with the generated parser and counts its leaves.
fn parse_document(text: &str) -> usize {
    let parsed = JsonParser::parse(Rule::json, text).expect("generated JSON parses");
    parsed.map(leaves).sum()
}

fn document(seed: usize) -> String {
    let mut text = String::from("{\n");
    for i in 0..100 {
        let _ = write!(text, "  \"item{i}\": {{ \"id\": {}, \"name\": \"thing \\\"{seed}\\\" \\u00e9 {i}\", \"ok\": {},",
            seed * 1000 + i, i % 3 == 0);
        let _ = write!(text, " \"ratio\": -{}.{}e-3, \"none\": null, \"tags\": [\"a\", \"b{i}\", {}, []],", i, seed % 97, i % 7);
        let _ = write!(text, " \"dims\": [[{i}, 0], [1, 2, 3]], \"meta\": {{ \"x\": {}, \"y\": {{}} }} }}{}\n",
            i * 3, if i + 1 < 100 { "," } else { "" });
    }
    text.push('}');
    text
}
RS
document_main_rs ptbench >> "$work/pt/ptbench/src/main.rs"
printf 'pest_derive = "=2.9.6"\n' >> "$work/pt/ptbench/Cargo.toml"
# pest_derive's generator depends on pest too: the same copy.
grep -q '^\[patch' "$work/pt/Cargo.toml" || printf '[patch.crates-io]\npest = { path = "pest" }\n' >> "$work/pt/Cargo.toml"

# tera 1 (default features off: no chrono, rand): one `Tera::render` of a page per context, a recursive macro
# rendering a tree of items, loops, filters; 400 renders of generated contexts.
workspace "$work/te" tebench tera@1.20.1 <<'RS'
use std::time::{Duration, Instant};
use tera::{Context, Map, Tera, Value};

const MACROS: &str = r#"{% macro node(item, depth) %}<li class="d{{ depth }}">{{ item.name | upper }} ({{ item.size }})
{%- if item.children %}<ul>{% for child in item.children %}{{ self::node(item=child, depth=depth + 1) }}{% endfor %}</ul>{% endif -%}
</li>{% endmacro node %}"#;

const PAGE: &str = r#"{% import "macros.html" as m %}<html><h1>{{ title | title }}</h1>
{% for section in sections -%}
<h2>{{ loop.index }}. {{ section.title | title }}</h2>
{% if section.items | length > 2 %}<ul>{% for item in section.items %}{{ m::node(item=item, depth=1) }}{% endfor %}</ul>
{% else %}<p>few</p>{% endif %}
{%- set total = section.items | length -%}
<p>{{ total }} items, {{ section.note | replace(from="a", to="o") | truncate(length=24) }}</p>
{% endfor %}</html>
"#;

fn item(seed: usize, depth: usize) -> Value {
    let mut item = Map::new();
    item.insert("name".into(), Value::from(format!("item {seed} at {depth}")));
    item.insert("size".into(), Value::from(seed * 37 % 1000));
    let children: Vec<Value> = if depth < 4 { (0..(seed % 3 + 1)).map(|c| item_of(seed * 3 + c, depth + 1)).collect() } else { Vec::new() };
    item.insert("children".into(), Value::Array(children));
    Value::Object(item)
}

fn item_of(seed: usize, depth: usize) -> Value {
    item(seed, depth)
}

fn context(seed: usize) -> Context {
    let mut context = Context::new();
    context.insert("title", &format!("report number {seed}"));
    let sections: Vec<Value> = (0..8)
        .map(|s| {
            let mut section = Map::new();
            section.insert("title".into(), Value::from(format!("section {s} of page {seed}")));
            section.insert("note".into(), Value::from("a note that says a lot about a thing and more"));
            section.insert("items".into(), Value::Array((0..(s % 4 + 1)).map(|i| item(seed + s * 7 + i, 1)).collect()));
            Value::Object(section)
        })
        .collect();
    context.insert("sections", &sections);
    context
}

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(400);
    let mut tera = Tera::default();
    tera.add_raw_templates(vec![("macros.html", MACROS), ("page.html", PAGE)]).expect("templates parse");
    let (mut bytes, mut spent) = (0usize, Duration::ZERO);
    for seed in 0..count {
        let context = context(seed);
        let started = Instant::now();
        let page = tera.render("page.html", &context);
        spent += started.elapsed();
        bytes += page.expect("page renders").len();
    }
    println!("{count} pages, {bytes} bytes");
    eprintln!("truth tera::tera::Tera::render {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
sed -i 's|^tera = { path = "../tera" }|tera = { path = "../tera", default-features = false }|' "$work/te/tebench/Cargo.toml"

# url 2: one `Url::parse` per URL, 200,000 URLs of 8 shapes (IPv6 and IDNA hosts, percent-encoding, dot segments,
# queries and fragments).
workspace "$work/ur" urbench url@2.5.8 <<'RS'
use std::time::{Duration, Instant};

fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let urls: Vec<String> = (0..count)
        .map(|i| match i % 8 {
            0 => format!("https://example.org/api/v{}/items/{i}?page={}&q=call%20time#top", i % 5, i % 31),
            1 => format!("http://user:pa%20ss@[::1]:{}/a/./b/../c/{i}", 8000 + i % 1000),
            2 => format!("https://B\u{fc}cher.example/k\u{e4}se/{i}?x=\u{e9}t\u{e9}"),
            3 => format!("file:///home/user/projects/{i}/src/../Cargo.toml"),
            4 => format!("ftp://192.168.{}.{}/pub/file-{i}.tar.gz", i % 256, (i / 256) % 256),
            5 => format!("HTTPS://WWW.EXAMPLE.COM:443/Path With Spaces/{i}?a=1&b=2&c=%zz"),
            6 => format!("mailto:someone{i}@example.com?subject=hello%20there"),
            _ => format!("https://sub{}.deep.nested.example.co.uk/{}/index.html?ref={i}", i % 97, "seg/".repeat(i % 6)),
        })
        .collect();
    let (mut host_bytes, mut segments, mut pairs, mut spent) = (0usize, 0usize, 0usize, Duration::ZERO);
    for text in &urls {
        let started = Instant::now();
        let parsed = url::Url::parse(text);
        spent += started.elapsed();
        let parsed = parsed.expect("valid URL");
        host_bytes += parsed.host_str().map_or(0, str::len);
        segments += parsed.path_segments().map_or(0, Iterator::count);
        pairs += parsed.query_pairs().count();
    }
    println!("{count} URLs, {host_bytes} host bytes, {segments} segments, {pairs} query pairs");
    eprintln!("truth url::Url::parse {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS

# similar 2: the program's own `diff_texts` (a line diff, Myers' recursive divide and conquer, then a unified diff
# printed) per pair of generated texts, 200 pairs of 1,500 lines with about 5% of the lines changed.
workspace "$work/si" sibench similar@2.7.0 <<'RS'
use similar::{ChangeTag, TextDiff};
use std::time::{Duration, Instant};

/// Lines changed between two texts, and the unified diff's length.
fn diff_texts(old: &str, new: &str) -> (usize, usize, usize) {
    let diff = TextDiff::from_lines(old, new);
    let (mut inserted, mut deleted) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => inserted += 1,
            ChangeTag::Delete => deleted += 1,
            ChangeTag::Equal => {}
        }
    }
    let unified = diff.unified_diff().context_radius(3).header("old", "new").to_string();
    (inserted, deleted, unified.len())
}

fn text(seed: u64, edits: bool) -> String {
    let mut state = seed;
    let mut text = String::new();
    for line in 0..1500u64 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        if edits && (state >> 33) % 20 == 0 {
            text.push_str(&format!("changed line {line} {}\n", state >> 50));
            if (state >> 40) % 2 == 0 {
                continue;
            }
        }
        text.push_str(&format!("line {line}: {} calltime probes in tree {}\n", line * 7 % 13, line % 31));
    }
    text
}

fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let (mut totals, mut spent) = ((0, 0, 0), Duration::ZERO);
    for seed in 0..count {
        let (old, new) = (text(seed, false), text(seed, true));
        let started = Instant::now();
        let (i, d, u) = diff_texts(&old, &new);
        spent += started.elapsed();
        totals = (totals.0 + i, totals.1 + d, totals.2 + u);
    }
    println!("{count} diffs: {} inserted, {} deleted, {} bytes of unified diff", totals.0, totals.1, totals.2);
    eprintln!("truth sibench::diff_texts {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS

# winnow 0.7: the program's own arithmetic parser in winnow's style (`&mut &str` parsers, `repeat(..).fold`,
# recursive `expr`/`term`/`factor`), one `parse_document` per document, 300 documents of 400 statements.
workspace "$work/wn" wnbench winnow@0.7.15 <<'RS'
use std::fmt::Write;
use std::time::{Duration, Instant};
use winnow::ascii::{digit1, multispace0};
use winnow::combinator::{alt, delimited, preceded, repeat};
use winnow::prelude::*;
use winnow::token::{one_of, take_while};

fn number(input: &mut &str) -> ModalResult<i64> {
    delimited(multispace0, digit1.try_map(str::parse::<i64>), multispace0).parse_next(input)
}

fn factor(input: &mut &str) -> ModalResult<i64> {
    alt((
        number,
        delimited((multispace0, '('), expr, (')', multispace0)),
        preceded((multispace0, '-'), factor).map(|v: i64| v.wrapping_neg()),
    ))
    .parse_next(input)
}

fn term(input: &mut &str) -> ModalResult<i64> {
    let first = factor.parse_next(input)?;
    repeat(0.., (one_of(['*', '/', '%']), factor))
        .fold(move || first, |acc: i64, (op, v): (char, i64)| match (op, v) {
            (_, 0) if op != '*' => acc,
            ('*', _) => acc.wrapping_mul(v),
            ('/', _) => acc.wrapping_div(v),
            _ => acc.wrapping_rem(v),
        })
        .parse_next(input)
}

fn expr(input: &mut &str) -> ModalResult<i64> {
    let first = term.parse_next(input)?;
    repeat(0.., (one_of(['+', '-']), term))
        .fold(move || first, |acc: i64, (op, v): (char, i64)| if op == '+' { acc.wrapping_add(v) } else { acc.wrapping_sub(v) })
        .parse_next(input)
}

fn statement<'s>(input: &mut &'s str) -> ModalResult<(&'s str, i64)> {
    let name = delimited(multispace0, take_while(1.., |c: char| c.is_alphanumeric() || c == '_'), multispace0)
        .parse_next(input)?;
    let value = preceded('=', expr).parse_next(input)?;
    (multispace0, ';').parse_next(input)?;
    Ok((name, value))
}

/// Parses and evaluates every statement of one document: the sum of the values and of the names' lengths.
fn parse_document(text: &str) -> i64 {
    let mut input = text;
    let mut sum = 0i64;
    while !input.trim_start().is_empty() {
        let (name, value) = statement.parse_next(&mut input).expect("generated statement parses");
        sum = sum.wrapping_add(value).wrapping_add(name.len() as i64);
    }
    sum
}

fn expression(state: &mut u64, depth: u32, out: &mut String) {
    *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let pick = (*state >> 59) as u32;
    if depth > 3 || pick < 6 {
        let _ = write!(out, "{}", (*state >> 40) % 1000);
    } else if pick < 10 {
        out.push_str("(");
        expression(state, depth + 1, out);
        out.push_str(")");
    } else if pick < 12 {
        out.push_str("-");
        expression(state, depth + 1, out);
    } else {
        expression(state, depth + 1, out);
        out.push_str([" + ", " - ", " * ", " / ", " % "][(pick % 5) as usize]);
        expression(state, depth + 1, out);
    }
}

fn document(seed: u64) -> String {
    let (mut state, mut text) = (seed, String::new());
    for i in 0..400 {
        let _ = write!(text, "value_{i} = ");
        expression(&mut state, 0, &mut text);
        text.push_str(";\n");
    }
    text
}

fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    let (mut total, mut spent) = (0i64, Duration::ZERO);
    for seed in 0..count {
        let text = document(seed);
        let started = Instant::now();
        total = total.wrapping_add(parse_document(&text));
        spent += started.elapsed();
    }
    println!("{count} documents, checksum {total}");
    eprintln!("truth wnbench::parse_document {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS

# jiff 1 (with jiff-core): the program's own `parse_batch` per batch of 1,000 log lines, each a timestamp, a civil
# date-time and an ISO 8601 span parsed with `str::parse`; 200 batches.
workspace "$work/jf" jfbench jiff@1.0.2 jiff-core@1.0.1 <<'RS'
use jiff::{civil::DateTime, Span, Timestamp};
use std::time::{Duration, Instant};

/// The sum of the seconds, years and hours in a batch of lines.
fn parse_batch(lines: &[String]) -> i64 {
    let mut sum = 0i64;
    for line in lines {
        let mut fields = line.split(' ');
        let stamp: Timestamp = fields.next().unwrap_or("").parse().expect("valid timestamp");
        let civil: DateTime = fields.next().unwrap_or("").parse().expect("valid date-time");
        let span: Span = fields.next().unwrap_or("").parse().expect("valid span");
        sum += stamp.as_second() + i64::from(civil.year()) + i64::from(span.get_hours());
    }
    sum
}

fn main() {
    let batches: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let lines: Vec<String> = (0..batches * 1000)
        .map(|i| {
            format!("2026-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}{} 2025-{:02}-{:02}T{:02}:{:02}:00 P{}DT{}H{}M{}.5S",
                1 + i % 12, 1 + i % 28, i % 24, i % 60, (i * 7) % 60, i % 1_000_000,
                ["Z", "+05:30", "-08:00"][i % 3], 1 + i % 12, 1 + (i / 3) % 28, i % 24, (i * 11) % 60,
                i % 9, i % 24, i % 60, i % 50)
        })
        .collect();
    let (mut total, mut spent) = (0i64, Duration::ZERO);
    for batch in lines.chunks(1000) {
        let started = Instant::now();
        total = total.wrapping_add(parse_batch(batch));
        spent += started.elapsed();
    }
    println!("{batches} batches, checksum {total}");
    eprintln!("truth jfbench::parse_batch {} {batches}", spent.as_nanos() as f64 / batches as f64);
}
RS

# hyper 1 (http1 server, hyper-util's tokio glue; a registry dependency): the program's own `async fn handle` (the
# service: routes on the path, reads a POST's body) per request, on a 2-worker tokio runtime, one task per
# connection; 4 client threads of the same process send 4,000 keep-alive requests each over 127.0.0.1 (bounded:
# each closes its connection after its last reply, and the server stops when all four are done).
mkdir -p "$work/hy/hybench/src"
printf '[workspace]\nmembers = ["hybench"]\nresolver = "2"\n[profile.release]\ndebug = 1\n' > "$work/hy/Cargo.toml"
printf '[package]\nname = "hybench"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]
hyper = { version = "1.12", features = ["http1", "server"] }\nhyper-util = { version = "0.1.21", features = ["tokio"] }
http-body-util = "0.1.5"\ntokio = { version = "1.54", features = ["rt-multi-thread", "net", "io-util"] }\n' \
  > "$work/hy/hybench/Cargo.toml"
cat > "$work/hy/hybench/src/main.rs" <<'RS'
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tokio::net::TcpListener;

static SPENT_NS: AtomicU64 = AtomicU64::new(0);
static SERVED: AtomicU64 = AtomicU64::new(0);

/// Answers one request: routes on its path, with the body of a POST read first.
async fn handle(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = request.uri().path().to_owned();
    let query = request.uri().query().unwrap_or("").to_owned();
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let (status, text) = route(&path, &query, &body);
    let mut response = Response::new(Full::new(Bytes::from(text)));
    *response.status_mut() = status;
    Ok(response)
}
fn route(path: &str, query: &str, body: &[u8]) -> (StatusCode, String) {
    match path.split('/').nth(1).unwrap_or("") {
        "sum" => (StatusCode::OK, format!("{}\n", sum_query(query))),
        "words" => (StatusCode::OK, reverse_words(body)),
        "table" => (StatusCode::OK, render_table(query)),
        _ => (StatusCode::NOT_FOUND, String::from("no such route\n")),
    }
}
fn params(query: &str) -> impl Iterator<Item = (&str, &str)> {
    query.split('&').filter_map(|pair| pair.split_once('='))
}
fn sum_query(query: &str) -> u64 {
    params(query).filter_map(|(_, v)| v.parse::<u64>().ok()).sum()
}
fn reverse_words(body: &[u8]) -> String {
    String::from_utf8_lossy(body).split_whitespace().rev().collect::<Vec<_>>().join(" ")
}
fn render_table(query: &str) -> String {
    let rows: usize = params(query).find(|(k, _)| *k == "rows").and_then(|(_, v)| v.parse().ok()).unwrap_or(4);
    let mut out = String::new();
    for row in 0..rows {
        let _ = writeln!(out, "{}", row_line(row));
    }
    out
}
fn row_line(row: usize) -> String {
    format!("| {row:4} | {:08x} | {} |", checksum(row.to_string().as_bytes()), "#".repeat(row % 16))
}
fn checksum(bytes: &[u8]) -> u32 {
    bytes.iter().fold(2166136261u32, |h, &b| (h ^ u32::from(b)).wrapping_mul(16777619))
}
async fn timed(request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let started = Instant::now();
    let response = handle(request).await;
    SPENT_NS.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
    SERVED.fetch_add(1, Ordering::Relaxed);
    response
}
/// One keep-alive connection sending `requests` requests of four shapes; a checksum of the replies.
fn client(port: u16, id: usize, requests: usize) -> u64 {
    let stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to the loopback server");
    stream.set_nodelay(true).expect("nodelay");
    let mut writer = stream.try_clone().expect("clone the stream");
    let mut reader = BufReader::new(stream);
    let (mut total, mut line) = (0u64, String::new());
    for i in 0..requests {
        let request = match i % 4 {
            0 => format!("GET /sum?a={i}&b={}&c=7 HTTP/1.1\r\nHost: local\r\n\r\n", id * 1000),
            1 => {
                let body = format!("request {i} from client {id} asks for its words in reverse order please");
                format!("POST /words HTTP/1.1\r\nHost: local\r\nContent-Length: {}\r\n\r\n{body}", body.len())
            }
            2 => format!("GET /table?rows={} HTTP/1.1\r\nHost: local\r\n\r\n", 4 + i % 20),
            _ => format!("GET /missing/{i} HTTP/1.1\r\nHost: local\r\n\r\n"),
        };
        writer.write_all(request.as_bytes()).expect("send");
        let (mut status, mut length) = (0u64, 0usize);
        loop {
            line.clear();
            reader.read_line(&mut line).expect("reply");
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some(code) = line.strip_prefix("HTTP/1.1 ") {
                status = code[..3].parse().unwrap_or(0);
            } else if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().expect("content length");
                }
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).expect("reply body");
        total = total.wrapping_add(u64::from(checksum(&body)) + status);
    }
    total
}
fn main() {
    let requests: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(4000);
    let clients = 4;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_io().build().expect("runtime");
    let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).expect("bind 127.0.0.1");
    let port = listener.local_addr().expect("local address").port();
    let threads: Vec<_> = (0..clients).map(|id| std::thread::spawn(move || client(port, id, requests))).collect();
    runtime.block_on(async move {
        let mut connections = Vec::new();
        for _ in 0..clients {
            let (stream, _) = listener.accept().await.expect("accept");
            stream.set_nodelay(true).expect("nodelay");
            connections.push(tokio::spawn(async move {
                http1::Builder::new().serve_connection(TokioIo::new(stream), service_fn(timed)).await
            }));
        }
        for connection in connections {
            connection.await.expect("connection task").expect("connection served");
        }
    });
    for (id, thread) in threads.into_iter().enumerate() {
        println!("client {id}: checksum {}", thread.join().expect("client thread"));
    }
    let served = SERVED.load(Ordering::Relaxed);
    println!("{served} requests served");
    eprintln!("truth hybench::handle {} {served}", SPENT_NS.load(Ordering::Relaxed) as f64 / served.max(1) as f64);
}
RS
# ciborium 0.2 (with ciborium-io, ciborium-ll; serde's derive in the program): the program's own `round_trip` (a
# document encoded to CBOR with `into_writer`, decoded with `from_reader`, compared) per document, 300 generated
# documents of about 30 KB (nested structs, enums, maps, options, byte strings).
workspace "$work/cb" cbbench ciborium@0.2.2 ciborium-io@0.2.2 ciborium-ll@0.2.2 <<'RS'
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
#[derive(Serialize, Deserialize, PartialEq, Debug)]
enum Shape {
    Point,
    Circle { radius: f64 },
    Polygon(Vec<(i32, i32)>),
}
#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Item {
    id: u64,
    name: String,
    tags: Vec<String>,
    weight: Option<f32>,
    shape: Shape,
    #[serde(with = "serde_bytes_like")]
    raw: Vec<u8>,
    children: Vec<Item>,
}
#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Document {
    title: String,
    items: Vec<Item>,
    meta: BTreeMap<String, i64>,
}
/// `Vec<u8>` as a CBOR byte string rather than an array of numbers.
mod serde_bytes_like {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bytes(bytes)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        Ok(ciborium::value::Value::deserialize(deserializer)
            .ok()
            .and_then(|value| value.into_bytes().ok())
            .unwrap_or_default())
    }
}
/// Encodes one document to CBOR and decodes it again; the encoded length.
fn round_trip(document: &Document) -> usize {
    let mut bytes = Vec::new();
    ciborium::into_writer(document, &mut bytes).expect("document encodes");
    let decoded: Document = ciborium::from_reader(bytes.as_slice()).expect("document decodes");
    assert!(decoded == *document, "round trip");
    bytes.len()
}
fn item(seed: u64, depth: u32) -> Item {
    let state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    Item {
        id: state >> 20,
        name: format!("item {seed} at depth {depth} \u{e9}"),
        tags: (0..(state >> 61) + 1).map(|t| format!("tag-{t}-{}", seed % 17)).collect(),
        weight: if state & 1 == 0 { Some((state >> 40) as f32 / 1024.0) } else { None },
        shape: match (state >> 33) % 3 {
            0 => Shape::Point,
            1 => Shape::Circle { radius: (state >> 45) as f64 / 7.0 },
            _ => Shape::Polygon((0..(state >> 59) as i32 + 3).map(|p| (p, -p * 3)).collect()),
        },
        raw: (0..(state >> 58) as u8 * 4).collect(),
        children: if depth < 2 { (0..(state >> 62) + 1).map(|c| item(seed * 4 + c, depth + 1)).collect() } else { Vec::new() },
    }
}
fn document(seed: u64) -> Document {
    Document {
        title: format!("document {seed}"),
        items: (0..60).map(|i| item(seed * 100 + i, 0)).collect(),
        meta: (0..20).map(|k| (format!("key{k}"), (seed * k) as i64 - 50)).collect(),
    }
}
fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    let (mut bytes, mut spent) = (0usize, Duration::ZERO);
    for seed in 0..count {
        let document = document(seed);
        let started = Instant::now();
        bytes += round_trip(&document);
        spent += started.elapsed();
    }
    println!("{count} documents, {bytes} bytes of CBOR");
    eprintln!("truth cbbench::round_trip {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
printf 'serde = { version = "1", features = ["derive"] }\n' >> "$work/cb/cbbench/Cargo.toml"
# textwrap 0.16 (unicode-linebreak, unicode-width, smawk: its default features): the program's own `layout` (each
# paragraph wrapped with the optimal-fit algorithm at its width, then filled and indented) per page, 300
# generated pages of about 8 KB (ASCII, accented, CJK and emoji words).
workspace "$work/tw" twbench textwrap@0.16.4 <<'RS'
use std::time::{Duration, Instant};
use textwrap::{Options, WordSeparator, WrapAlgorithm};
/// Lays out one page: its line count and display width summed.
fn layout(page: &str, width: usize) -> (usize, usize) {
    let options = Options::new(width).word_separator(WordSeparator::UnicodeBreakProperties)
        .wrap_algorithm(WrapAlgorithm::new_optimal_fit());
    let (mut lines, mut columns) = (0, 0);
    for paragraph in page.split("\n\n") {
        for line in textwrap::wrap(paragraph, &options) {
            lines += 1;
            columns += textwrap::core::display_width(&line);
        }
        let filled = textwrap::fill(paragraph, width / 2 + 10);
        columns += textwrap::indent(&filled, "> ").len();
    }
    (lines, columns)
}
fn page(seed: u64) -> String {
    let words = ["calltime", "probe", "caf\u{e9}", "na\u{ef}ve", "\u{6f22}\u{5b57}\u{304b}\u{306a}", "tree",
        "\u{1f600}\u{1f680}", "supercalifragilistic", "a", "of", "the", "x-y-z", "hyphen-ated", "na\u{308}ive", "end."];
    let (mut state, mut text) = (seed, String::new());
    for paragraph in 0..12 {
        for _ in 0..(60 + paragraph * 5) {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            text.push_str(words[(state >> 59) as usize % words.len()]);
            text.push(' ');
        }
        text.push_str("\n\n");
    }
    text
}
fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    let (mut totals, mut spent) = ((0, 0), Duration::ZERO);
    for seed in 0..count {
        let text = page(seed);
        let started = Instant::now();
        let (lines, columns) = layout(&text, 40 + (seed as usize % 5) * 10);
        spent += started.elapsed();
        totals = (totals.0 + lines, totals.1 + columns);
    }
    println!("{count} pages, {} lines, {} columns", totals.0, totals.1);
    eprintln!("truth twbench::layout {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
# petgraph 0.8: the program's own `analyze` (Dijkstra's distances from a source, an A* path to a target, the nodes
# a depth-first search reaches) per source, 100 sources in a generated directed graph of 20,000 nodes and 100,000
# weighted edges; strongly connected components once (not under the root).
workspace "$work/pg" pgbench petgraph@0.8.3 <<'RS'
use petgraph::algo::{astar, dijkstra, kosaraju_scc};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::Dfs;
use std::time::{Duration, Instant};
/// Shortest distances from `source`: their sum, the A* cost to `target`, and how many nodes a DFS reaches.
fn analyze(graph: &DiGraph<u32, u32>, source: NodeIndex, target: NodeIndex) -> (u64, u32, usize) {
    let distances = dijkstra(graph, source, None, |edge| *edge.weight());
    let total: u64 = distances.values().map(|&d| u64::from(d)).sum();
    let cost = astar(graph, source, |n| n == target, |edge| *edge.weight(), |_| 0).map_or(u32::MAX, |(c, _)| c);
    let mut dfs = Dfs::new(graph, source);
    let mut reached = 0;
    while dfs.next(graph).is_some() {
        reached += 1;
    }
    (total, cost, reached)
}
fn main() {
    let sources: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    let nodes = 20_000u32;
    let mut graph = DiGraph::<u32, u32>::with_capacity(nodes as usize, 100_000);
    let indices: Vec<NodeIndex> = (0..nodes).map(|n| graph.add_node(n)).collect();
    let mut state = 42u64;
    for e in 0..100_000u32 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let from = if e < nodes { e } else { (state >> 33) as u32 % nodes };
        let to = ((state >> 13) as u32 % 7 + from + 1) % nodes ^ u32::from(e % 5 == 0) * ((state >> 45) as u32 % nodes);
        graph.add_edge(indices[from as usize], indices[to as usize % nodes as usize], 1 + (state >> 58) as u32);
    }
    println!("{} components", kosaraju_scc(&graph).len());
    let (mut sums, mut spent) = ((0u64, 0u64, 0usize), Duration::ZERO);
    for s in 0..sources {
        let (source, target) = (indices[(s * 197 % nodes) as usize], indices[(s * 7919 % nodes) as usize]);
        let started = Instant::now();
        let (total, cost, reached) = analyze(&graph, source, target);
        spent += started.elapsed();
        sums = (sums.0 + total, sums.1 + u64::from(cost), sums.2 + reached);
    }
    println!("{sources} sources: distance sum {}, a* cost sum {}, {} reached", sums.0, sums.1, sums.2);
    eprintln!("truth pgbench::analyze {} {sources}", spent.as_nanos() as f64 / sources as f64);
}
RS
# png 0.18 (flate2, fdeflate, miniz_oxide, crc32fast from the registry): the program's own `decode` (read_info,
# next_frame, a checksum of the pixels) per image, 32 generated 256x256 images (RGBA, RGB, grey, palette; every
# filter) encoded by png's own encoder first (not under the root), each decoded 8 times.
workspace "$work/pn" pnbench png@0.18.1 <<'RS'
use std::io::Cursor;
use std::time::{Duration, Instant};
/// Decodes one PNG: its pixel bytes' checksum.
fn decode(bytes: &[u8]) -> u64 {
    let decoder = png::Decoder::new(Cursor::new(bytes));
    let mut reader = decoder.read_info().expect("valid PNG header");
    let mut pixels = vec![0; reader.output_buffer_size().expect("buffer size")];
    let info = reader.next_frame(&mut pixels).expect("valid PNG frame");
    pixels[..info.buffer_size()].iter().fold(0u64, |h, &b| h.rotate_left(5) ^ u64::from(b))
}
fn encode(seed: u32) -> Vec<u8> {
    let (width, height) = (256u32, 256u32);
    let (color, channels) = [(png::ColorType::Rgba, 4), (png::ColorType::Rgb, 3), (png::ColorType::Grayscale, 1),
        (png::ColorType::Indexed, 1)][seed as usize % 4];
    let filter = [png::Filter::NoFilter, png::Filter::Sub, png::Filter::Up, png::Filter::Avg, png::Filter::Paeth,
        png::Filter::Adaptive, png::Filter::MinEntropy][seed as usize % 7];
    let mut data = Vec::with_capacity((width * height * channels) as usize);
    for y in 0..height {
        for x in 0..width {
            for c in 0..channels {
                let smooth = (x * (c + 1) + y * 3 + seed * 11) % 256;
                let noise = (x.wrapping_mul(2654435761) ^ y.wrapping_mul(40503) ^ seed) >> 28;
                data.push((smooth + noise) as u8 % if color == png::ColorType::Indexed { 16 } else { 255 });
            }
        }
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(color);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_filter(filter);
    if color == png::ColorType::Indexed {
        encoder.set_palette((0..16u8).flat_map(|i| [i * 16, 255 - i * 16, i * 8]).collect::<Vec<u8>>());
    }
    let mut writer = encoder.write_header().expect("header");
    writer.write_image_data(&data).expect("image data");
    writer.finish().expect("finish");
    out
}
fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(8);
    let images: Vec<Vec<u8>> = (0..32).map(encode).collect();
    let (mut folded, mut calls, mut spent) = (0u64, 0usize, Duration::ZERO);
    for _ in 0..rounds {
        for image in &images {
            let started = Instant::now();
            folded = folded.rotate_left(7) ^ decode(image);
            spent += started.elapsed();
            calls += 1;
        }
    }
    println!("{calls} decodes of {} bytes of PNG, checksum {folded:016x}", images.iter().map(Vec::len).sum::<usize>());
    eprintln!("truth pnbench::decode {} {calls}", spent.as_nanos() as f64 / calls as f64);
}
RS
# rayon in the program's own code (rayon 1 from the registry): the program's own `analyze` (a parallel fold of its
# lines into word counts, reduced; the longest word; a parallel checksum of 4 KB chunks) per document, 100
# generated documents of 256 KB.
mkdir -p "$work/ry/rybench/src"
printf '[workspace]\nmembers = ["rybench"]\nresolver = "2"\n[profile.release]\ndebug = 1\n' > "$work/ry/Cargo.toml"
printf '[package]\nname = "rybench"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\nrayon = "1.10"\n' \
  > "$work/ry/rybench/Cargo.toml"
cat > "$work/ry/rybench/src/main.rs" <<'RS'
use rayon::prelude::*;
use std::collections::HashMap;
use std::time::{Duration, Instant};
/// Distinct words, a checksum and the longest word of one document, counted in parallel.
fn analyze(document: &str) -> (usize, u64, usize) {
    let counts = document
        .par_lines()
        .fold(HashMap::new, |mut counts, line| {
            count_line(&mut counts, line);
            counts
        })
        .reduce(HashMap::new, merge);
    let longest = document.par_lines().map(longest_word).max().unwrap_or(0);
    let checksum: u64 = document.as_bytes().par_chunks(4096).map(chunk_checksum).sum();
    (counts.len(), checksum, longest)
}
fn count_line(counts: &mut HashMap<String, usize>, line: &str) {
    for word in line.split_whitespace() {
        *counts.entry(normalize(word)).or_insert(0) += 1;
    }
}
fn normalize(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase()
}
fn merge(mut into: HashMap<String, usize>, from: HashMap<String, usize>) -> HashMap<String, usize> {
    for (word, count) in from {
        *into.entry(word).or_insert(0) += count;
    }
    into
}
fn longest_word(line: &str) -> usize {
    line.split_whitespace().map(str::len).max().unwrap_or(0)
}
fn chunk_checksum(chunk: &[u8]) -> u64 {
    chunk.iter().fold(14695981039346656037u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(1099511628211))
}
fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    let (mut totals, mut spent) = ((0usize, 0u64, 0usize), Duration::ZERO);
    for seed in 0..count {
        let document = String::from_utf8(generated_text(256 * 1024, seed)).expect("ASCII text");
        let started = Instant::now();
        let (words, checksum, longest) = analyze(&document);
        spent += started.elapsed();
        totals = (totals.0 + words, totals.1.wrapping_add(checksum), totals.2.max(longest));
    }
    println!("{count} documents: {} distinct words, checksum {:016x}, longest {}", totals.0, totals.1, totals.2);
    eprintln!("truth rybench::analyze {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
generated_text_rs >> "$work/ry/rybench/src/main.rs"
# aho-corasick 1: the program's own `scan` per haystack (an automaton built from the patterns that haystack's
# topic names, then its leftmost-longest matches counted and replaced), 2,000 generated haystacks of about 8 KB.
workspace "$work/ac" acbench aho-corasick@1.1.5 <<'RS'
use aho_corasick::{AhoCorasick, MatchKind};
use std::time::{Duration, Instant};
const WORDS: &[&str] = &["alpha", "beta", "gamma", "delta", "calltime", "probe", "tree", "node", "root", "leaf",
    "branch", "folded", "sampled", "retired", "quiet", "writer", "thread", "invocation", "parent", "child"];
/// Matches of the topic's patterns in one haystack, and the length after replacing them.
fn scan(patterns: &[String], haystack: &str) -> (usize, usize) {
    let automaton = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .ascii_case_insensitive(true)
        .build(patterns)
        .expect("patterns build");
    let matches = automaton.find_iter(haystack).count();
    let replaced = automaton.replace_all(haystack, &vec!["#"; patterns.len()]);
    (matches, replaced.len())
}
fn topic(seed: usize) -> Vec<String> {
    let mut patterns = Vec::new();
    for (i, a) in WORDS.iter().enumerate() {
        for b in WORDS.iter().skip((seed + i) % 7).step_by(3) {
            patterns.push(format!("{a} {b}"));
        }
        patterns.push(format!("{a}{}", seed % 10));
    }
    patterns
}
fn haystack(seed: usize) -> String {
    let mut state = seed as u64 * 7919 + 1;
    let mut text = String::with_capacity(8300);
    while text.len() < 8192 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let word = WORDS[(state >> 59) as usize % WORDS.len()];
        if state & 0x10 == 0 { text.push_str(&word.to_uppercase()) } else { text.push_str(word) }
        text.push(if state & 0x7 == 0 { '\n' } else { ' ' });
        if state & 0x3 == 0 { text.push_str(&format!("{}", (state >> 40) % 10)); }
    }
    text
}
fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let (mut matches, mut length, mut spent) = (0usize, 0usize, Duration::ZERO);
    for seed in 0..count {
        let (patterns, text) = (topic(seed % 7), haystack(seed));
        let started = Instant::now();
        let (found, replaced) = scan(&patterns, &text);
        spent += started.elapsed();
        matches += found;
        length += replaced;
    }
    println!("{count} haystacks, {matches} matches, {length} bytes after replacing");
    eprintln!("truth acbench::scan {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
# unicode-segmentation 1: the program's own `segment` per paragraph (extended grapheme clusters, words and sentence
# pieces counted), 400 generated paragraphs of about 8 KB of ASCII, accented, Hangul, Devanagari, emoji with ZWJ
# and flags.
workspace "$work/us" usbench unicode-segmentation@1.13.3 <<'RS'
use std::time::{Duration, Instant};
use unicode_segmentation::UnicodeSegmentation;
const WORDS: &[&str] = &["plain", "naïve", "café", "한국어", "नमस्ते", "👨‍👩‍👧", "🇫🇷", "e\u{301}tude", "don't", "3.14",
    "Ünïcödé", "日本語", "x", "über-cool", "👍🏽", "word"];
/// Grapheme clusters, words and sentence pieces of one paragraph.
fn segment(text: &str) -> (usize, usize, usize) {
    let graphemes = text.graphemes(true).count();
    let words = text.unicode_words().count();
    let sentences = text.split_sentence_bounds().count();
    (graphemes, words, sentences)
}
fn paragraph(seed: usize) -> String {
    let mut state = seed as u64 + 17;
    let mut text = String::with_capacity(8300);
    while text.len() < 8192 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        text.push_str(WORDS[(state >> 60) as usize]);
        text.push_str(if state & 0x1f == 0 { ". " } else if state & 0x3f == 1 { "! " } else { " " });
    }
    text
}
fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(400);
    let (mut totals, mut spent) = ((0usize, 0usize, 0usize), Duration::ZERO);
    for seed in 0..count {
        let text = paragraph(seed);
        let started = Instant::now();
        let (g, w, s) = segment(&text);
        spent += started.elapsed();
        totals = (totals.0 + g, totals.1 + w, totals.2 + s);
    }
    println!("{count} paragraphs: {} graphemes, {} words, {} sentence pieces", totals.0, totals.1, totals.2);
    eprintln!("truth usbench::segment {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
# bincode 1 (serde's derive from the registry): the program's own `round_trip` (a document serialized with
# `bincode::serialize`, deserialized with `bincode::deserialize`, compared) per document, 1,000 generated documents
# of about 20 KB (nested structs, enums, maps, options, strings, byte vectors).
workspace "$work/bc" bcbench bincode@1.3.3 <<'RS'
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
#[derive(Serialize, Deserialize, PartialEq, Debug)]
enum Shape { Point, Circle { radius: f64 }, Polygon(Vec<(i32, i32)>), Label(String) }
#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Item { id: u64, name: String, tags: Vec<String>, shape: Shape, weight: Option<f32>, blob: Vec<u8> }
#[derive(Serialize, Deserialize, PartialEq, Debug)]
struct Document { title: String, items: Vec<Item>, index: BTreeMap<String, u32>, version: (u16, u16, u16) }
/// One document through bincode and back: its encoded length (the program checks it is equal).
fn round_trip(document: &Document) -> usize {
    let bytes = bincode::serialize(document).expect("serializes");
    let back: Document = bincode::deserialize(&bytes).expect("deserializes");
    assert_eq!(&back, document);
    bytes.len()
}
fn document(seed: u64) -> Document {
    let items = (0..120u64).map(|i| {
        let k = seed * 131 + i;
        let shape = match k % 4 {
            0 => Shape::Point,
            1 => Shape::Circle { radius: k as f64 / 7.0 },
            2 => Shape::Polygon((0..(k % 9) as i32).map(|p| (p, -p * 3)).collect()),
            _ => Shape::Label(format!("label-{k}")),
        };
        Item { id: k, name: format!("item {k} of {seed}"), tags: (0..k % 5).map(|t| format!("t{t}")).collect(), shape,
            weight: (k % 3 != 0).then(|| k as f32 * 0.5), blob: (0..(k % 64) as u8).collect() }
    }).collect();
    let index = (0..40u32).map(|i| (format!("key-{seed}-{i}"), i * 7)).collect();
    Document { title: format!("document {seed}"), items, index, version: (1, (seed % 10) as u16, 3) }
}
fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let (mut bytes, mut spent) = (0usize, Duration::ZERO);
    for seed in 0..count {
        let doc = document(seed);
        let started = Instant::now();
        bytes += round_trip(&doc);
        spent += started.elapsed();
    }
    println!("{count} documents, {bytes} bytes of bincode");
    eprintln!("truth bcbench::round_trip {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
printf 'serde = { version = "1", features = ["derive"] }\n' >> "$work/bc/bcbench/Cargo.toml"
# async-executor 1 (with async-task; futures-lite from the registry): the program's own `async fn job` per task
# (4 checksum subtasks spawned on the executor and awaited, a yield between them), 2,000 tasks spawned from the main
# thread on a static executor that it and one worker thread run (tasks move between the two threads).
workspace "$work/ax" axbench async-executor@1.14.1 async-task@4.7.1 <<'RS'
use async_executor::Executor;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};
static EXECUTOR: Executor<'static> = Executor::new();
/// A job: its data cut in 4 parts, each checksummed by a task of its own; the parts' sums combined.
async fn job(seed: u64) -> u64 {
    let data: Vec<u64> = (0..16_384u64).map(|i| i.wrapping_mul(seed | 1) ^ (i >> 3)).collect();
    let parts: Vec<_> = data.chunks(4096).map(|c| EXECUTOR.spawn(checksum(c.to_vec()))).collect();
    futures_lite::future::yield_now().await;
    let mut total = 0u64;
    for part in parts {
        total = total.rotate_left(9) ^ part.await;
    }
    total
}
async fn checksum(part: Vec<u64>) -> u64 {
    part.iter().fold(14695981039346656037u64, |h, &x| (h ^ x).wrapping_mul(1099511628211))
}
/// Set once the main thread is done, waking the worker's `run`.
struct Stop { done: AtomicBool, waker: Mutex<Option<Waker>> }
static STOP: Stop = Stop { done: AtomicBool::new(false), waker: Mutex::new(None) };
fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let worker = std::thread::spawn(|| {
        futures_lite::future::block_on(EXECUTOR.run(std::future::poll_fn(|cx| {
            *STOP.waker.lock().unwrap() = Some(cx.waker().clone());
            if STOP.done.load(Ordering::Acquire) { Poll::Ready(()) } else { Poll::Pending }
        })))
    });
    let (total, spent) = futures_lite::future::block_on(EXECUTOR.run(async {
        let tasks: Vec<_> = (0..count).map(|seed| EXECUTOR.spawn(async move {
            let started = Instant::now();
            let sum = job(seed).await;
            (sum, started.elapsed())
        })).collect();
        let (mut total, mut spent) = (0u64, Duration::ZERO);
        for task in tasks {
            let (sum, took) = task.await;
            total = total.wrapping_add(sum);
            spent += took;
        }
        (total, spent)
    }));
    STOP.done.store(true, Ordering::Release);
    if let Some(waker) = STOP.waker.lock().unwrap().take() { waker.wake() }
    worker.join().expect("worker thread");
    println!("{count} jobs, checksum {total:016x}");
    eprintln!("truth axbench::job {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
printf 'futures-lite = "2"\n' >> "$work/ax/axbench/Cargo.toml"
# handlebars 4 (pest, serde_json from the registry): one `Registry::render` of a registered page template per
# context (each, if/else, nested paths, a partial, a custom helper, escaping), 400 generated contexts of 60 items.
workspace "$work/hb" hbbench handlebars@4.5.0 <<'RS'
use handlebars::{handlebars_helper, Handlebars};
use serde_json::json;
use std::time::{Duration, Instant};
const PAGE: &str = r#"<h1>{{title}}</h1>{{> header}}
<ul>{{#each items}}
  <li class="{{#if (even @index)}}even{{else}}odd{{/if}}">{{@index}}: {{name}} &mdash; {{shout tag}}
  {{#if details}}<p>{{details.text}} ({{details.score}})</p>{{/if}}
  {{#each sizes}}<span>{{this}}</span>{{/each}}</li>{{/each}}
</ul>{{#with owner}}<footer>{{name}} &lt;{{email}}&gt;</footer>{{/with}}"#;
handlebars_helper!(even: |i: u64| i % 2 == 0);
handlebars_helper!(shout: |s: str| s.to_uppercase());
fn context(seed: usize) -> serde_json::Value {
    let items: Vec<_> = (0..60).map(|i| json!({
        "name": format!("item <{i}> & {seed}"), "tag": format!("t{}", i % 7),
        "details": if i % 3 == 0 { json!({"text": format!("details of {i}"), "score": i * seed % 100}) } else { json!(null) },
        "sizes": (0..i % 5).collect::<Vec<_>>(),
    })).collect();
    json!({"title": format!("page {seed}"), "items": items, "owner": {"name": "Ann", "email": "ann@example.org"}})
}
fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(400);
    let mut registry = Handlebars::new();
    registry.register_template_string("page", PAGE).expect("page template");
    registry.register_partial("header", "<header>{{title}} ({{items.[0].name}} first)</header>").expect("partial");
    registry.register_helper("even", Box::new(even));
    registry.register_helper("shout", Box::new(shout));
    let (mut bytes, mut spent) = (0usize, Duration::ZERO);
    for seed in 0..count {
        let data = context(seed);
        let started = Instant::now();
        let page = registry.render("page", &data).expect("renders");
        spent += started.elapsed();
        bytes += page.len();
    }
    println!("{count} pages, {bytes} bytes");
    eprintln!("truth handlebars::registry::Registry::render {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
printf 'serde_json = "1"\n' >> "$work/hb/hbbench/Cargo.toml"
# yaml-rust2 0.13 (hashlink, arraydeque, encoding_rs from the registry): one `YamlLoader::load_from_str` per
# document (a scanner, then a recursive-descent parser building the tree), 300 generated documents of about 24 KB
# (nested block mappings and sequences, flow collections, anchors and aliases, quoted and block scalars).
workspace "$work/yr" yrbench yaml-rust2@0.13.1 <<'RS'
use std::fmt::Write;
use std::time::{Duration, Instant};
use yaml_rust2::{Yaml, YamlLoader};
fn document(seed: usize) -> String {
    let mut text = String::from("%YAML 1.2\n---\ndefaults: &defaults\n  retries: 3\n  timeout: 2.5\n  tags: [base, \"quoted, tag\"]\n");
    for i in 0..60 {
        let _ = write!(text, "service_{seed}_{i}:\n  <<: *defaults\n  name: 'svc ''{i}'''\n  port: {}\n  enabled: {}\n",
            8000 + i, i % 2 == 0);
        let _ = write!(text, "  hosts:\n    - host-{i}.example.org\n    - {{ addr: \"10.0.{}.{}\", weight: {}.5 }}\n", i % 256, seed % 256, i % 9);
        let _ = write!(text, "  limits: {{cpu: {i}, mem: {}Mi, nested: {{x: [1, 2, {{y: z}}], n: ~}}}}\n", i * 64);
        let _ = write!(text, "  script: |\n    echo start {i}\n    run --flag=\"{seed}\"\n  note: >\n    folded text of {i}\n    over two lines\n");
        let _ = write!(text, "  matrix:\n    - [a, b, c]\n    - - deep\n      - - deeper: {i}\n          k: v\n");
    }
    text.push_str("...\n");
    text
}
/// Scalars and collections in a loaded document (the program walks what the parser built).
fn nodes(yaml: &Yaml) -> usize {
    match yaml {
        Yaml::Array(items) => 1 + items.iter().map(nodes).sum::<usize>(),
        Yaml::Hash(map) => 1 + map.iter().map(|(k, v)| nodes(k) + nodes(v)).sum::<usize>(),
        _ => 1,
    }
}
fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    let (mut total, mut spent) = (0usize, Duration::ZERO);
    for seed in 0..count {
        let text = document(seed);
        let started = Instant::now();
        let loaded = YamlLoader::load_from_str(&text);
        spent += started.elapsed();
        total += loaded.expect("generated YAML loads").iter().map(nodes).sum::<usize>();
    }
    println!("{count} documents, {total} nodes");
    eprintln!("truth yaml_rust2::yaml::YamlLoader::load_from_str {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
# markdown 1 (markdown-rs; unicode-id from the registry): one `markdown::to_html` per document (CommonMark: a
# state-machine tokenizer whose every state is a function called through one dispatcher, then the HTML compiler),
# 100 generated documents of about 20 KB.
workspace "$work/md" mdbench markdown@1.0.0 <<'RS'
use std::fmt::Write;
use std::time::{Duration, Instant};
fn document(seed: usize) -> String {
    let mut text = format!("# Document {seed}\n\nSetext title\n============\n\n");
    for i in 0..40 {
        let _ = write!(text, "## Section {i} with `code` and *emphasis*\n\nA paragraph with **strong {i}**, _em_, a [link](https://example.org/{seed}/{i} \"title\"),\n");
        let _ = write!(text, "an autolink <https://x.org/{i}>, an entity &amp; &#169; &copy;, a ![image](img{i}.png) and a\nhard break  \nthen `inline ``ticks`` code` and escaped \\*stars\\*.\n\n");
        let _ = write!(text, "- item {i}\n  - nested *{i}*\n    1. ordered\n    2. list with [ref][r{i}]\n- another\n\n> quote {i}\n> > nested **quote**\n\n");
        let _ = write!(text, "```rust\nfn f{i}() -> u32 {{ {i} }}\n```\n\n    indented code {i}\n\n<div class=\"x{i}\">raw html</div>\n\n***\n\n[r{i}]: /ref/{i} 'ref title'\n\n");
    }
    text
}
fn main() {
    let count: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    let (mut bytes, mut spent) = (0usize, Duration::ZERO);
    for seed in 0..count {
        let text = document(seed);
        let started = Instant::now();
        let html = markdown::to_html(&text);
        spent += started.elapsed();
        bytes += html.len();
    }
    println!("{count} documents, {bytes} bytes of HTML");
    eprintln!("truth markdown::to_html {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
# rustc-demangle 0.1: the program's own `demangle_batch` (each symbol demangled and printed with and without its
# hash: tiny recursive printer functions) per batch of 1,000 generated symbols (v0: nested paths, generic
# arguments, impls, closures, references, tuples; legacy `_ZN..E` with escapes and hashes), 200 batches.
workspace "$work/rd" rdbench rustc-demangle@0.1.28 <<'RS'
use std::fmt::Write;
use std::time::{Duration, Instant};
const WORDS: &[&str] = &["core", "alloc", "parser", "Value", "next", "fmt", "iter", "State", "run", "tree", "Node"];
/// A v0 identifier: its length, a `_` when it starts with a digit or `_`, its bytes.
fn ident(word: &str) -> String {
    if word.starts_with(|c: char| c.is_ascii_digit() || c == '_') { format!("{}_{word}", word.len()) } else { format!("{}{word}", word.len()) }
}
/// A v0 path `krate::m1::..::last`, `depth` segments under the crate root.
fn path(state: &mut u64, depth: usize) -> String {
    let mut text = format!("Cs{}_{}", next(state) % 1000, ident(WORDS[(next(state) % 3) as usize]));
    for d in 0..depth {
        let word = WORDS[(next(state) % WORDS.len() as u64) as usize];
        text = format!("N{}{text}{}", if d + 1 == depth { 'v' } else { 't' }, ident(&format!("{word}{d}")));
    }
    text
}
/// A v0 type: a basic type, a reference, a slice, a tuple or a path with generic arguments.
fn ty(state: &mut u64, depth: usize) -> String {
    match if depth == 0 { 0 } else { next(state) % 6 } {
        0 => ["h", "j", "m", "e", "b", "u", "y"][(next(state) % 7) as usize].to_string(),
        1 => format!("R{}", ty(state, depth - 1)),
        2 => format!("S{}", ty(state, depth - 1)),
        3 => format!("T{}{}E", ty(state, depth - 1), ty(state, depth - 1)),
        4 => format!("I{}{}E", path(state, 2), ty(state, depth - 1)),
        _ => path(state, 1),
    }
}
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *state >> 33
}
fn symbol(state: &mut u64) -> String {
    match next(state) % 6 {
        0 => format!("_R{}", path(state, 4)),
        1 => format!("_RI{}{}{}E", path(state, 3), ty(state, 3), ty(state, 2)),
        2 => format!("_RNvM{}{}{}", path(state, 2), path(state, 2), ident("method")),
        3 => format!("_RNvX{}{}{}{}", path(state, 1), ty(state, 2), path(state, 2), ident("fmt")),
        4 => format!("_RNCNC{}00", path(state, 3)),
        _ => {
            let mut text = String::from("_ZN");
            for _ in 0..1 + next(state) % 5 {
                let word = ["$LT$impl$u20$core..fmt..Debug$u20$for$u20$T$GT$", "parser", "Value$LP$u8$RP$", "next"][(next(state) % 4) as usize];
                let _ = write!(text, "{}{word}", word.len());
            }
            let _ = write!(text, "17h{:016x}E", next(state) << 32 | next(state));
            text
        }
    }
}
fn demangle_batch(symbols: &[String]) -> usize {
    let mut out = String::new();
    for symbol in symbols {
        let demangled = rustc_demangle::demangle(symbol);
        let _ = write!(out, "{demangled}\n{demangled:#}\n");
    }
    out.len()
}
fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let (mut bytes, mut spent) = (0usize, Duration::ZERO);
    for seed in 0..count {
        let mut state = seed;
        let symbols: Vec<String> = (0..1000).map(|_| symbol(&mut state)).collect();
        let started = Instant::now();
        bytes += demangle_batch(&symbols);
        spent += started.elapsed();
    }
    println!("{count} batches, {bytes} bytes demangled");
    eprintln!("truth rdbench::demangle_batch {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
# chrono 0.4 (default features; num-traits, iana-time-zone from the registry): the program's own `round_trip` per
# batch of 500 timestamps (each formatted with a strftime-like format, as RFC 3339 and RFC 2822, parsed back with
# `parse_from_str`, `parse_from_rfc3339` and `parse_from_rfc2822`: many small values), 400 batches.
workspace "$work/ch" chbench chrono@0.4.45 <<'RS'
use chrono::{DateTime, FixedOffset, NaiveDateTime, TimeZone, Utc};
use std::time::{Duration, Instant};
const FORMAT: &str = "%Y-%m-%d %H:%M:%S%.3f %a %b %j";
fn round_trip(seconds: &[i64]) -> (usize, i64) {
    let (mut bytes, mut sum) = (0usize, 0i64);
    for (i, &secs) in seconds.iter().enumerate() {
        let utc = Utc.timestamp_opt(secs, (i as u32 % 1000) * 1_000_000).single().expect("in range");
        let offset = FixedOffset::east_opt((i as i32 % 25 - 12) * 3600).expect("offset");
        let local = utc.with_timezone(&offset);
        let text = local.format(FORMAT).to_string();
        let rfc3339 = local.to_rfc3339();
        let rfc2822 = local.to_rfc2822();
        let naive = NaiveDateTime::parse_from_str(&text, FORMAT).expect("own format parses");
        let back = DateTime::parse_from_rfc3339(&rfc3339).expect("RFC 3339 parses");
        let mail = DateTime::parse_from_rfc2822(&rfc2822).expect("RFC 2822 parses");
        assert_eq!(back.timestamp(), mail.timestamp());
        bytes += text.len() + rfc3339.len() + rfc2822.len();
        sum = sum.wrapping_add(naive.and_utc().timestamp() ^ back.timestamp_millis());
    }
    (bytes, sum)
}
fn main() {
    let count: i64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(400);
    let (mut bytes, mut sum, mut spent) = (0usize, 0i64, Duration::ZERO);
    for batch in 0..count {
        let seconds: Vec<i64> = (0..500).map(|i| 946_684_800 + (batch * 500 + i) * 7_919_111 % 2_000_000_000).collect();
        let started = Instant::now();
        let (b, s) = round_trip(&seconds);
        spent += started.elapsed();
        bytes += b;
        sum = sum.wrapping_add(s);
    }
    println!("{count} batches, {bytes} bytes formatted, checksum {sum}");
    eprintln!("truth chbench::round_trip {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
# rusqlite 0.40 with the bundled SQLite (libsqlite3-sys and the rest from the registry): the program's own
# `run_batch` per batch (200 rows inserted in a transaction with a cached statement, an aggregate query, a
# filtered select mapped into rows), 300 batches on one in-memory database.
workspace "$work/sl" slbench rusqlite@0.40.2 <<'RS'
use rusqlite::{params, Connection};
use std::time::{Duration, Instant};
fn run_batch(conn: &Connection, batch: i64) -> rusqlite::Result<(i64, usize)> {
    let tx = conn.unchecked_transaction()?;
    {
        let mut insert = tx.prepare_cached("INSERT INTO item (batch, name, price, tags) VALUES (?1, ?2, ?3, ?4)")?;
        for i in 0..200 {
            insert.execute(params![batch, format!("item-{batch}-{i}"), (i * 37 % 1000) as f64 / 10.0, format!("t{}", i % 7)])?;
        }
    }
    tx.commit()?;
    let total: i64 = conn.query_row("SELECT COUNT(*) + SUM(LENGTH(name)) FROM item WHERE batch = ?1", [batch], |row| row.get(0))?;
    let mut select = conn.prepare_cached("SELECT name, price, tags FROM item WHERE batch = ?1 AND price > ?2 ORDER BY price DESC LIMIT 50")?;
    let rows = select.query_map(params![batch, 50.0], |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, f64>(1)?, row.get::<_, String>(2)?))
    })?;
    let mut bytes = 0;
    for row in rows {
        let (name, price, tags) = row?;
        bytes += name.len() + tags.len() + (price as usize);
    }
    Ok((total, bytes))
}
fn main() {
    let count: i64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    let conn = Connection::open_in_memory().expect("in-memory database");
    conn.execute_batch("CREATE TABLE item (id INTEGER PRIMARY KEY, batch INTEGER, name TEXT, price REAL, tags TEXT);
        CREATE INDEX item_batch ON item (batch, price);").expect("schema");
    let (mut total, mut bytes, mut spent) = (0i64, 0usize, Duration::ZERO);
    for batch in 0..count {
        let started = Instant::now();
        let (t, b) = run_batch(&conn, batch).expect("batch runs");
        spent += started.elapsed();
        total += t;
        bytes += b;
    }
    println!("{count} batches, total {total}, {bytes} bytes selected");
    eprintln!("truth slbench::run_batch {} {count}", spent.as_nanos() as f64 / count as f64);
}
RS
# The bundled SQLite (compiled from libsqlite3-sys's C sources by its build script).
sed -i 's|^rusqlite = { path = "../rusqlite" }$|rusqlite = { path = "../rusqlite", features = ["bundled"] }|' "$work/sl/slbench/Cargo.toml"
echo "== builds (plain, then the default plan from a fresh calltime target dir)"
build() { # NAME BENCH ROOT
  local name=$1 bench=$2 root=$3 dir=$work/$1 built
  if [ -n "${REUSE_BUILDS:-}" ] && [ -x "$work/$name-plain" ] && [ -x "$work/$name-d5" ]; then return; fi
  (cd "$dir" && cargo build -q --release --bin "$bench") 2> "$work/build-$name.log" \
    || fail "cannot build $name plainly in $dir (see $work/build-$name.log)"
  cp "$dir/target/release/$bench" "$work/$name-plain"
  rm -rf "$dir/target/calltime"
  built=$(cd "$dir" && "$CC" calltime build --release --bin "$bench" --root "$root" --depth 5 2>> "$work/build-$name.log" \
    | tail -1) || fail "cannot build $name instrumented from $root (see $work/build-$name.log)"
  cp "$built" "$work/$name-d5"
  grep -E '^(warning|note)' "$work/build-$name.log" | sed "s/^/  $name: /" || true
}
root_of() {
  case $1 in tm) echo Document::parse;; rx) echo string::Regex::new;; qx) echo count_events;;
    mz) echo deflate::compress_to_vec;; hp) echo Request::parse;; ae) echo handle;; cs) echo csv::Reader::read_record;;
    sq) echo Parser::parse_sql;; sv) echo VersionReq::parse;; sh) echo digest_chunk;; lz) echo compress_prepend_size;;
    nm) echo parse_document;; pt) echo parse_document;; te) echo Tera::render;; ur) echo Url::parse;;
    si) echo diff_texts;; wn) echo parse_document;; jf) echo parse_batch;; hy) echo handle;; cb) echo round_trip;;
    tw) echo layout;; pg) echo analyze;; pn) echo pnbench::decode;; ry) echo analyze;; ac) echo acbench::scan;;
    us) echo usbench::segment;; bc) echo bcbench::round_trip;; ax) echo axbench::job;; hb) echo Registry::render;;
    yr) echo YamlLoader::load_from_str;; md) echo markdown::to_html;; rd) echo rdbench::demangle_batch;;
    ch) echo chbench::round_trip;; sl) echo slbench::run_batch;; esac
}
bench_of() {
  case $1 in tm) echo tmbench;; rx) echo rxbench;; qx) echo qxbench;; mz) echo mzbench;; hp) echo hpbench;;
    ae) echo aebench;; cs) echo csbench;; sq) echo sqbench;; sv) echo svbench;; sh) echo shbench;; lz) echo lzbench;;
    nm) echo nmbench;; pt) echo ptbench;; te) echo tebench;; ur) echo urbench;; si) echo sibench;; wn) echo wnbench;;
    jf) echo jfbench;; hy) echo hybench;; cb) echo cbbench;; tw) echo twbench;; pg) echo pgbench;; pn) echo pnbench;;
    ry) echo rybench;; ac) echo acbench;; us) echo usbench;; bc) echo bcbench;; ax) echo axbench;; hb) echo hbbench;;
    yr) echo yrbench;; md) echo mdbench;; rd) echo rdbench;; ch) echo chbench;; sl) echo slbench;;
  esac
}
for name in $only; do build "$name" "$(bench_of "$name")" "$(root_of "$name")"; done

echo "== per program: output, side by side (alternating, $runs runs; medians), instructions, root mean vs plain"
export CALLTIME_OUT=$work/scratch.trace
for name in $only; do
  [ "${EXTRA_PLANS:-}" != only ] || break
  if cmp -s <("$work/$name-plain" 2>/dev/null) <("$work/$name-d5" 2>/dev/null); then
    echo "$name: output identical"
  else
    echo "$name: output DIFFERENT"
  fi
  python3 "$repo/scripts/alternate-runs.py" --runs "$runs" --warmup 1 plain="$work/$name-plain" d5="$work/$name-d5" \
    > "$work/runs.$name"
  awk -v n="$name" '{ w[$1] = $2; c[$1] = $3 } END { printf "%s: wall %.1f ms -> %.1f ms (%.2fx), cpu %.2fx\n", n,
    w["plain"], w["d5"], w["d5"] / w["plain"], c["d5"] / c["plain"] }' "$work/runs.$name"
  if [ -z "${NO_CALLGRIND:-}" ] && command -v valgrind >/dev/null; then
    for kind in plain d5; do
      valgrind --tool=callgrind --callgrind-out-file=/dev/null "$work/$name-$kind" 2>&1 >/dev/null \
        | sed -n 's/.*Collected : *//p' > "$work/ir.$name.$kind"
    done
    awk -v n="$name" 'NR == FNR { p = $1; next } { printf "%s: instructions %.1f M -> %.1f M (%.2fx)\n", n, p / 1e6,
      $1 / 1e6, $1 / p }' "$work/ir.$name.plain" "$work/ir.$name.d5"
  fi
  # The root's mean from the aggregate of the kept trees as the report shows it (`--top 0`, compensated); JSON
  # would hold every kept tree (gigabytes for httparse's 300,000 invocations).
  for i in 1 2 3; do
    "$work/$name-plain" 2> "$work/truth.$name.$i" > /dev/null
    rm -f "$work/$name.$i.trace"*   # no segments of an earlier run beside it
    CALLTIME_OUT=$work/$name.$i.trace "$work/$name-d5" > /dev/null 2>&1
    "$CC" calltime report "$work/$name.$i.trace" --top 0 > "$work/$name.$i.txt" 2> "$work/report.stderr" \
      || fail "cargo calltime report failed on $work/$name.$i.trace: $(cat "$work/report.stderr")"
  done
  "$CC" calltime report "$work/$name.1.trace" --format aggregate > "$work/$name.aggregate.txt" 2>&1 || true
  python3 "$repo/scripts/root-mean.py" "$work/$name".[123].txt "$work/truth.$name".[123] | sed "s/^/  /"
  # What a new user would look at: every view of the first run (JSON only when the trace is small: it holds every
  # kept tree), the JSON's trees checked by placement-check.py, and `diff` of the first two runs.
  views=""
  for format in text aggregate svg folded chrome table html json; do
    if [ "$format" = json ] && [ "$(cat "$work/$name.1.trace"* | wc -c)" -gt 20000000 ]; then
      views="$views json:skipped(trace over 20 MB)"
      continue
    fi
    if "$CC" calltime report "$work/$name.1.trace" --format "$format" -o "$work/$name.view.$format" \
        2> "$work/$name.view.$format.stderr"; then
      views="$views $format:$(wc -c < "$work/$name.view.$format")B"
    else
      views="$views $format:FAILED"
    fi
  done
  echo "  views$views (stderr of each in $work/$name.view.*.stderr)"
  # (head closes the pipe early: not a failure)
  [ ! -s "$work/$name.view.json" ] || { python3 "$repo/scripts/placement-check.py" "$work/$name.view.json" 2>&1 \
    | head -3 | sed "s/^/  placement-check: /"; } || true
  "$CC" calltime diff "$work/$name.1.trace" "$work/$name.2.trace" > "$work/$name.diff.txt" 2>&1 \
    && echo "  diff: $(head -1 "$work/$name.diff.txt")" || echo "  diff FAILED (see $work/$name.diff.txt)"
  echo "  trace $(cat "$work/$name.1.trace"* | grep -a '^stats ' | tail -1) (seen kept sampled_out dropped truncated)"
done
if [ -n "${EXTRA_PLANS:-}" ]; then
  # The trees under other plans (once each): the default binary with CALLTIME_EXACT=1 (`--exact`: no retirement,
  # every invocation recorded) against its default run, then a `--depth 8` build, default and exact. Each JSON is
  # checked by placement-check.py (children never above their parent, means inside their extremes), and the default
  # runs' call counts on the first tree against the exact runs' (up to depth 5 and 8).
  echo "== other plans: --exact and --depth 8"
  for name in $only; do
    bench=$(bench_of "$name") dir=$work/$name
    if [ -z "${REUSE_BUILDS:-}" ] || [ ! -x "$work/$name-d8" ]; then
      built=$(cd "$dir" && "$CC" calltime build --release --bin "$bench" --root "$(root_of "$name")" --depth 8 \
        2>> "$work/build-$name.log" | tail -1) || fail "cannot build $name at depth 8 (see $work/build-$name.log)"
      cp "$built" "$work/$name-d8"
    fi
    for plan in d5 d8; do
      for mode in default exact; do
        rm -f "$work/$name.$plan.$mode.trace"*
        if [ "$mode" = exact ]; then export CALLTIME_EXACT=1; else unset CALLTIME_EXACT; fi
        CALLTIME_OUT=$work/$name.$plan.$mode.trace "$work/$name-$plan" > "$work/$name.$plan.$mode.out" 2>/dev/null
        unset CALLTIME_EXACT
        cmp -s "$work/$name.$plan.$mode.out" "$work/$name.$plan.default.out" \
          || echo "$name: $plan $mode output DIFFERENT from the default run's"
        "$CC" calltime report "$work/$name.$plan.$mode.trace" --format json -o "$work/$name.$plan.$mode.json" \
          2> "$work/$name.$plan.$mode.stderr" || echo "$name: $plan $mode report FAILED ($work/$name.$plan.$mode.stderr)"
        python3 "$repo/scripts/placement-check.py" "$work/$name.$plan.$mode.json" 2>&1 | head -3 \
          | sed "s/^/  $name $plan $mode: /" || true
      done
      python3 "$repo/scripts/placement-check.py" "$work/$name.$plan.default.json" "$work/$name.$plan.exact.json" \
        "${plan#d}" 2>&1 | grep -A3 '^first tree' | sed "s/^/  $name $plan counts against exact: /" || true
    done
  done
fi
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
