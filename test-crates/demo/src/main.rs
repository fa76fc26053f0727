//! Serves a fixed list of requests (or one request per line of stdin with `--stdin`) and prints the responses.
//! `--exit-code N` exits with N after serving, to show that the exit code is passed on.

use std::io::BufRead;

const REQUESTS: &[&str] = &[
    "GET /users/1",
    "GET /users/2",
    "GET /users/1",
    "GET /posts/7",
    "GET /posts/7",
    "GET /posts/300",
    "GET /stats",
    "GET /checksum/12",
    "GET /checksum/twelve",
    "POST /users/9",
    "FETCH /",
    "GET /nowhere",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let requests: Vec<String> = if args.iter().any(|a| a == "--stdin") {
        std::io::stdin().lock().lines().map_while(Result::ok).collect()
    } else {
        REQUESTS.iter().map(|r| r.to_string()).collect()
    };
    // Keep the panic of a bad request to one line on stderr; the server goes on.
    std::panic::set_hook(Box::new(|info| eprintln!("request panicked: {info}")));
    for request in &requests {
        let response = std::panic::catch_unwind(|| demo::server::handle(request))
            .unwrap_or_else(|_| "500 internal error".to_owned());
        println!("{request} -> {response}");
    }
    if let Some(pos) = args.iter().position(|a| a == "--exit-code") {
        let code = args.get(pos + 1).and_then(|c| c.parse().ok()).unwrap_or(1);
        std::process::exit(code);
    }
}
