//! A small reader of the flamegraph SVGs (inferno's, as calltime edits them): parsed as XML, so a malformed SVG
//! fails the test.

use quick_xml::events::Event;

#[derive(Debug)]
pub struct Frame {
    /// The tooltip: `name (9.71ms, P%)`.
    pub title: String,
    /// Percent of the width.
    pub x: f64,
    pub width: f64,
    pub fill: String,
    /// The label drawn on the frame.
    pub label: String,
}

impl Frame {
    pub fn name(&self) -> &str {
        self.title.rsplit_once(" (").map_or(self.title.as_str(), |(name, _)| name)
    }
}

/// Parses the SVG as XML (failing on malformed XML) and returns its frames (`<g>` with a `<title>` and a `<rect>`)
/// and the text of its top-level `<text>` elements (title, subtitle, ...).
pub fn svg_frames(svg: &str) -> (Vec<Frame>, Vec<String>) {
    let mut reader = quick_xml::Reader::from_str(svg);
    let mut frames = Vec::new();
    let mut texts = Vec::new();
    let mut stack: Vec<String> = Vec::new();
    let mut current: Option<Frame> = None;
    let mut text = String::new();
    let number = |v: &str| v.trim_end_matches('%').parse::<f64>().unwrap_or(f64::NAN);
    loop {
        let event = reader.read_event().unwrap_or_else(|e| panic!("the SVG is not well-formed XML: {e}"));
        match event {
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if name == "g" {
                    current = Some(Frame {
                        title: String::new(),
                        x: f64::NAN,
                        width: f64::NAN,
                        fill: String::new(),
                        label: String::new(),
                    });
                }
                text.clear();
                stack.push(name);
            }
            Event::Empty(e) if e.name().as_ref() == b"rect" => {
                if let Some(frame) = current.as_mut() {
                    for attr in e.attributes() {
                        let attr = attr.unwrap();
                        let value = String::from_utf8_lossy(&attr.value).into_owned();
                        match attr.key.as_ref() {
                            b"x" => frame.x = number(&value),
                            b"width" => frame.width = number(&value),
                            b"fill" => frame.fill = value,
                            _ => {}
                        }
                    }
                }
            }
            Event::Text(t) => text.push_str(&t.decode().unwrap()),
            Event::GeneralRef(r) => {
                let name = r.decode().unwrap();
                let c = match name.as_ref() {
                    "lt" => '<',
                    "gt" => '>',
                    "amp" => '&',
                    "quot" => '"',
                    "apos" => '\'',
                    _ => r.resolve_char_ref().unwrap().unwrap_or('?'),
                };
                text.push(c);
            }
            Event::End(e) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                stack.pop();
                match name.as_str() {
                    "title" => {
                        if let Some(frame) = current.as_mut() {
                            frame.title = text.clone();
                        }
                    }
                    "text" => match current.as_mut() {
                        Some(frame) => frame.label = text.clone(),
                        None => texts.push(text.clone()),
                    },
                    "g" => {
                        if let Some(frame) = current.take() {
                            if !frame.title.is_empty() {
                                frames.push(frame);
                            }
                        }
                    }
                    _ => {}
                }
                text.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
    (frames, texts)
}
