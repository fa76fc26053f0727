/// `200 <body>` with the body escaped.
pub fn ok(body: &str) -> String {
    format!("200 {}", escape(body))
}

pub fn error(code: u16, message: &str) -> String {
    format!("{code} {}", escape(message))
}

pub fn user(name: &str, from: &str) -> String {
    ok(&format!("user {name} <{from}>"))
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
