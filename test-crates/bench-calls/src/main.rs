//! Workloads for scripts/truth-bench.sh (see docs/truth-bench.md):
//!   bench-calls tokenizer [INVOCATIONS]       root `tokenizer::tokenize_doc` over 64 KB, default 50 times
//!   bench-calls many-roots [INVOCATIONS]      root `files::search_file` (10 calls each), default 200,000 times
//!   bench-calls threads N [INVOCATIONS]       many-roots split over N threads (same total, same checksum)
//!   bench-calls truth [ROUNDS]                plain-build means of the tokenizer's functions, timed from outside
//! Each prints `checksum <hex>` on stdout, deterministic for given arguments.

mod files;
mod tokenizer;
mod truth;

use std::hint::black_box;
use std::process::ExitCode;

const TEXT_LEN: usize = 64 * 1024;
const FILE_COUNT: usize = 64;

fn arg_u64(args: &[String], index: usize, default: u64) -> Result<u64, String> {
    match args.get(index) {
        None => Ok(default),
        Some(s) => s.parse().map_err(|_| format!("bench-calls: `{s}` is not a count; pass a whole number")),
    }
}

fn run_tokenizer(invocations: u64) -> u64 {
    let text = tokenizer::generate_text(TEXT_LEN, 0x5eed);
    let mut sum = 0u64;
    for _ in 0..invocations {
        sum = sum.rotate_left(1) ^ tokenizer::tokenize_doc(black_box(&text));
    }
    sum
}

fn run_threads(threads: u64, invocations: u64) -> u64 {
    let files = files::generate_files(FILE_COUNT, 0xf11e);
    let per_thread = invocations / threads;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let files = &files;
                scope.spawn(move || files::search_all(files, per_thread, t * per_thread))
            })
            .collect();
        handles.into_iter().fold(0u64, |sum, h| sum.wrapping_add(h.join().unwrap_or(0)))
    })
}

fn run(args: &[String]) -> Result<u64, String> {
    let workload = args.get(1).map(String::as_str).unwrap_or("");
    match workload {
        "tokenizer" => Ok(run_tokenizer(arg_u64(args, 2, 50)?)),
        "many-roots" => {
            let files = files::generate_files(FILE_COUNT, 0xf11e);
            Ok(files::search_all(&files, arg_u64(args, 2, 200_000)?, 0))
        }
        "threads" => {
            let threads = arg_u64(args, 2, 4)?.max(1);
            Ok(run_threads(threads, arg_u64(args, 3, 200_000)?))
        }
        "truth" => {
            let text = tokenizer::generate_text(TEXT_LEN, 0x5eed);
            Ok(truth::run(&text, arg_u64(args, 2, 200)? as u32))
        }
        _ => Err(format!("bench-calls: unknown workload `{workload}`; use tokenizer, many-roots, threads N or truth")),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match run(&args) {
        Ok(sum) => {
            println!("checksum {sum:016x}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
