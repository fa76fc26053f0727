//! A small std-only TCP server on loopback with its own load generator, for the long-running service tests
//! (issue 14) and scripts/services-bench.sh. Every request is one line, `<n>\n`; the answer is one line. The root is
//! `server::handle_request`; every 1000th request takes a slow path (3 ms) so the slow trees stand out.
//!
//! - `serve <requests> <clients>`: serves exactly `requests` requests sent by `clients` connections, then exits.
//! - `serve-for <ms> <clients>`: serves whatever the clients send in `ms` milliseconds.
//! - `fanout <copies> <requests>`: runs `copies - 1` copies of itself (`serve <requests> 2`) next to its own.
//!
//! Each prints `served <count> in <ms> ms` (and `total <count>` for fanout) on stdout.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod server {
    /// One request: parse it, compute the answer, format it.
    pub fn handle_request(line: &str) -> String {
        let n = parse(line);
        let value = respond(n);
        format_answer(n, value)
    }

    fn parse(line: &str) -> u64 {
        line.trim().parse().unwrap_or(0)
    }

    fn respond(n: u64) -> u64 {
        if n % 1000 == 999 {
            slow_path(n)
        } else {
            checksum(n)
        }
    }

    fn slow_path(n: u64) -> u64 {
        std::thread::sleep(std::time::Duration::from_millis(3));
        checksum(n)
    }

    fn checksum(n: u64) -> u64 {
        (0..16).fold(n, |acc, i| mix(acc, i))
    }

    fn mix(acc: u64, i: u64) -> u64 {
        acc.rotate_left(5) ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    fn format_answer(n: u64, value: u64) -> String {
        format!("{n} {value:x}\n")
    }
}

/// Answers every line of one connection until the client closes it.
fn serve_connection(stream: TcpStream, served: &AtomicU64) {
    let mut writer = match stream.try_clone() {
        Ok(writer) => writer,
        Err(_) => return,
    };
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        let answer = server::handle_request(&line);
        served.fetch_add(1, Ordering::Relaxed);
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// One client: sends requests one at a time, each after the previous answer, while `more(i)` says so.
fn client(port: u16, first: u64, more: impl Fn(u64) -> bool) -> u64 {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the server");
    stream.set_nodelay(true).expect("no delay");
    let mut writer = stream.try_clone().expect("clone the stream");
    let mut reader = BufReader::new(stream);
    let mut answer = String::new();
    let mut sent = 0;
    while more(sent) {
        writeln!(writer, "{}", first + sent).expect("send a request");
        answer.clear();
        reader.read_line(&mut answer).expect("read an answer");
        sent += 1;
    }
    sent
}

/// Serves on an ephemeral loopback port while `clients` clients run `load(client, port)`; the requests served.
fn run_server(clients: u64, load: impl Fn(u64, u16) -> u64 + Send + Sync + 'static) -> u64 {
    let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind a loopback port");
    let port = listener.local_addr().expect("local address").port();
    let served = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let acceptor = {
        let (served, stop) = (served.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut connections = Vec::new();
            for stream in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let served = served.clone();
                connections.push(std::thread::spawn(move || serve_connection(stream, &served)));
            }
            for connection in connections {
                let _ = connection.join();
            }
        })
    };
    let load = Arc::new(load);
    let senders: Vec<_> = (0..clients)
        .map(|c| {
            let load = load.clone();
            std::thread::spawn(move || load(c, port))
        })
        .collect();
    for sender in senders {
        sender.join().expect("client thread");
    }
    stop.store(true, Ordering::Relaxed);
    // Wakes the acceptor so it sees `stop`.
    let _ = TcpStream::connect(("127.0.0.1", port));
    acceptor.join().expect("acceptor thread");
    served.load(Ordering::Relaxed)
}

fn number(args: &[String], at: usize, default: u64) -> u64 {
    args.get(at).and_then(|a| a.parse().ok()).unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let started = Instant::now();
    let served = match args.get(1).map(String::as_str) {
        Some("serve") => {
            let (requests, clients) = (number(&args, 2, 10_000), number(&args, 3, 2).max(1));
            run_server(clients, move |c, port| {
                let share = requests / clients + u64::from(c < requests % clients);
                client(port, c * 1_000_000_000, |sent| sent < share)
            })
        }
        Some("serve-for") => {
            let (ms, clients) = (number(&args, 2, 1000), number(&args, 3, 2).max(1));
            let deadline = started + Duration::from_millis(ms);
            run_server(clients, move |c, port| client(port, c * 1_000_000_000, |_| Instant::now() < deadline))
        }
        Some("fanout") => {
            let (copies, requests) = (number(&args, 2, 3).max(1), number(&args, 3, 1000));
            let exe = std::env::current_exe().expect("own executable");
            let children: Vec<_> = (1..copies)
                .map(|_| {
                    std::process::Command::new(&exe)
                        .args(["serve", &requests.to_string(), "2"])
                        .stdout(std::process::Stdio::piped())
                        .spawn()
                        .expect("spawn a copy")
                })
                .collect();
            let own = run_server(2, move |c, port| client(port, c * 1_000_000_000, |sent| sent < requests / 2));
            let mut total = own;
            for child in children {
                let out = child.wait_with_output().expect("a copy ran");
                let text = String::from_utf8_lossy(&out.stdout);
                total += text.split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
            }
            println!("total {total}");
            own
        }
        _ => {
            eprintln!("usage: e2e-server serve <requests> <clients> | serve-for <ms> <clients> | fanout <copies> <requests>");
            std::process::exit(2);
        }
    };
    println!("served {served} in {} ms", started.elapsed().as_millis());
}
