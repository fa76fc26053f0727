//! A real headless Chromium driven over the WebDriver protocol (Debian's `chromium` and `chromium-driver`), with a
//! minimal HTTP client on std: no network beyond 127.0.0.1, nothing downloaded.
//!
//! [`Browser::start`] returns `None` when Chromium or chromedriver is missing, except under `CI=true`, where a
//! missing browser fails the test (`.ci/run` installs it).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Chromium's flags for a headless run on a machine with no network, no GPU and no sandbox support.
const CHROMIUM_ARGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
];

pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/lib/chromium")])
        .find_map(|dir| names.iter().map(|name| dir.join(name)).find(|candidate| candidate.is_file()))
}

impl Browser {
    pub fn start() -> Option<Browser> {
        let chromium = find_program(&["chromium", "chromium-browser"]);
        let driver = find_program(&["chromedriver"]);
        let (Some(chromium), Some(driver)) = (chromium, driver) else {
            let what = "headless Chromium and chromedriver (Debian: apt-get install chromium chromium-driver)";
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("CI=true but {what} are missing: .ci/run installs them");
            }
            eprintln!("skipping the browser test: {what} are not installed");
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", driver.display()));
        let profile = tempfile::tempdir().unwrap();
        let mut browser = Browser { driver: child, port, session: String::new(), _profile: profile };
        browser.wait_until_ready();
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", browser._profile.path().display()));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let created = browser.request("POST", "/session", Some(caps));
        browser.session = created["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {created}")).to_owned();
        Some(browser)
    }

    fn wait_until_ready(&self) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            if let Ok(status) = self.try_request("GET", "/status", None) {
                if status["ready"].as_bool() == Some(true) {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("chromedriver did not start on port {}", self.port);
    }

    /// One WebDriver command; returns its `value`, panicking on a WebDriver error.
    pub fn request(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let value = self.try_request(method, path, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        if let Some(error) = value.get("error") {
            panic!("{method} {path}: {error}: {}", value["message"]);
        }
        value
    }

    fn try_request(&self, method: &str, path: &str, body: Option<Value>) -> std::io::Result<Value> {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        // One connection per command: simpler than keeping one open, and chromedriver is local.
        write!(
            stream,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            body.len()
        )?;
        let (head, body) = read_response(&mut stream)?;
        let parsed: Value = serde_json::from_str(&body)
            .map_err(|e| std::io::Error::other(format!("bad answer ({e}): {head} {}", &body[..body.len().min(300)])))?;
        Ok(parsed.get("value").cloned().unwrap_or(parsed))
    }

    fn session_path(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    pub fn open(&self, file: &Path) {
        let url = format!("file://{}", file.display());
        self.request("POST", &self.session_path("/url"), Some(json!({ "url": url })));
    }

    /// The first element matching a CSS selector, as a WebDriver element reference.
    pub fn find(&self, css: &str) -> Value {
        let found =
            self.request("POST", &self.session_path("/element"), Some(json!({"using": "css selector", "value": css})));
        assert!(found.is_object(), "no element matches {css}");
        found
    }

    fn element_id(element: &Value) -> String {
        element.as_object().and_then(|o| o.values().next()).and_then(Value::as_str).unwrap().to_owned()
    }

    /// A real click (the browser's input pipeline, not a synthetic event).
    pub fn click(&self, element: &Value) {
        let path = self.session_path(&format!("/element/{}/click", Self::element_id(element)));
        self.request("POST", &path, Some(json!({})));
    }

    pub fn displayed(&self, element: &Value) -> bool {
        let path = self.session_path(&format!("/element/{}/displayed", Self::element_id(element)));
        self.request("GET", &path, None).as_bool().unwrap()
    }

    /// Runs `script` (a function body; `arguments[i]` are `args`) in the page and returns its result.
    pub fn execute(&self, script: &str, args: Vec<Value>) -> Value {
        self.request("POST", &self.session_path("/execute/sync"), Some(json!({"script": script, "args": args})))
    }

    /// Enters an iframe (`Some(element)`) or goes back to the top document (`None`).
    pub fn frame(&self, element: Option<&Value>) {
        let id = element.cloned().unwrap_or(Value::Null);
        self.request("POST", &self.session_path("/frame"), Some(json!({ "id": id })));
    }

    /// The browser console's entries since the last call: `(level, message)`.
    pub fn console(&self) -> Vec<(String, String)> {
        let entries = self.request("POST", &self.session_path("/se/log"), Some(json!({"type": "browser"})));
        let entries = entries.as_array().cloned().unwrap_or_default();
        entries
            .iter()
            .map(|e| (e["level"].as_str().unwrap_or("").to_owned(), e["message"].as_str().unwrap_or("").to_owned()))
            .collect()
    }

    /// A PNG of the viewport.
    pub fn screenshot(&self) -> Vec<u8> {
        let encoded = self.request("GET", &self.session_path("/screenshot"), None);
        decode_base64(encoded.as_str().unwrap())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.try_request("DELETE", &self.session_path(""), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Reads one HTTP answer: its head, and its body by `Content-Length` or chunks (chromedriver keeps the connection
/// open, so the end of the stream cannot mark the end of the answer).
fn read_response(stream: &mut TcpStream) -> std::io::Result<(String, String)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = stream.read(&mut buf)?;
        data.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&data);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let lower = head.to_ascii_lowercase();
            let length = lower
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            let complete = match length {
                Some(length) => body.len() >= length,
                None if lower.contains("transfer-encoding: chunked") => body.ends_with("0\r\n\r\n"),
                None => n == 0,
            };
            if complete || n == 0 {
                let body = if length.is_none() && lower.contains("chunked") { unchunk(body) } else { body.to_owned() };
                return Ok((head.to_owned(), body));
            }
        }
        if n == 0 {
            return Err(std::io::Error::other("the connection closed before an answer"));
        }
    }
}

/// The body of a chunked HTTP answer: hex length lines, each followed by that many bytes.
fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("0").trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

fn decode_base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=' && !c.is_ascii_whitespace()).map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &d)| n | (u32::from(d) << (18 - 6 * i)));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}
