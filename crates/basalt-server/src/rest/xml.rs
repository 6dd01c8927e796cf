//! XML as HBase's REST models use it: a request body read into a small element tree
//! ([`parse`]), and responses written with escaping ([`Writer`]). The models are shallow
//! (a `CellSet` is three levels), so a tree costs little and keeps each model's reader a
//! plain walk.

use quick_xml::events::Event;
use quick_xml::Reader;

/// Deeper than any model goes; a body nesting further is refused before it costs stack.
const MAX_DEPTH: usize = 16;

/// One element: its name, attributes in document order, child elements and text.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Element>,
    pub text: String,
}

impl Element {
    /// The value of attribute `name`.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The child elements called `name`.
    pub fn each<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }
}

/// Why a body is not well-formed XML.
fn malformed(detail: impl std::fmt::Display) -> String {
    format!("malformed XML: {detail}")
}

/// Reads `body` into its root element. DTDs are refused (no entity expansion, no external
/// references); only the five predefined entities and character references are resolved.
///
/// # Errors
/// What is wrong with the body, for a 400 answer.
pub fn parse(body: &[u8]) -> Result<Element, String> {
    let mut reader = Reader::from_reader(body);
    let mut stack: Vec<Element> = Vec::new();
    let mut buf = Vec::new();
    loop {
        let event = reader.read_event_into(&mut buf).map_err(malformed)?;
        match event {
            Event::Start(_) | Event::Empty(_) if stack.len() >= MAX_DEPTH => {
                return Err(malformed(format!(
                    "elements nested deeper than {MAX_DEPTH}"
                )));
            }
            Event::Start(e) => stack.push(element(&e)?),
            Event::Empty(e) => {
                let el = element(&e)?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => return Ok(el),
                }
            }
            Event::End(_) => {
                let done = stack.pop().ok_or_else(|| malformed("unbalanced end tag"))?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(done),
                    None => return Ok(done),
                }
            }
            Event::Text(t) => push_text(&mut stack, &t.xml10_content().map_err(malformed)?),
            Event::CData(t) => push_text(&mut stack, &String::from_utf8_lossy(&t)),
            Event::GeneralRef(r) => {
                let text = match r.resolve_char_ref().map_err(malformed)? {
                    Some(c) => c.to_string(),
                    None => {
                        let name = r.decode().map_err(malformed)?;
                        quick_xml::escape::resolve_predefined_entity(&name)
                            .ok_or_else(|| malformed(format!("unknown entity &{name};")))?
                            .to_owned()
                    }
                };
                push_text(&mut stack, &text);
            }
            Event::DocType(_) => return Err(malformed("a DTD is not accepted")),
            Event::Eof => return Err(malformed("the body ends before its root element does")),
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) => {}
        }
        buf.clear();
    }
}

fn push_text(stack: &mut [Element], text: &str) {
    if let Some(top) = stack.last_mut() {
        top.text.push_str(text);
    }
}

fn element(e: &quick_xml::events::BytesStart<'_>) -> Result<Element, String> {
    let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
    let mut attrs = Vec::new();
    for a in e.attributes() {
        let a = a.map_err(malformed)?;
        let key = String::from_utf8_lossy(a.key.local_name().as_ref()).into_owned();
        let value = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(malformed)?
            .into_owned();
        attrs.push((key, value));
    }
    Ok(Element {
        name,
        attrs,
        children: Vec::new(),
        text: String::new(),
    })
}

/// Writes an XML document: the declaration HBase's JAXB writer puts first, then elements.
#[derive(Debug)]
pub struct Writer {
    out: String,
}

impl Writer {
    pub fn new() -> Writer {
        Writer {
            out: String::from("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>"),
        }
    }

    /// `<name a="v" ...` — finish it with [`Writer::close_empty`] or [`Writer::open_end`].
    pub fn open(&mut self, name: &str, attrs: &[(&str, &str)]) -> &mut Self {
        self.out.push('<');
        self.out.push_str(name);
        for (k, v) in attrs {
            self.attr(k, v);
        }
        self
    }

    pub fn attr(&mut self, k: &str, v: &str) -> &mut Self {
        self.out.push(' ');
        self.out.push_str(k);
        self.out.push_str("=\"");
        self.out.push_str(&quick_xml::escape::escape(v));
        self.out.push('"');
        self
    }

    /// `/>`
    pub fn close_empty(&mut self) -> &mut Self {
        self.out.push_str("/>");
        self
    }

    /// `>`
    pub fn open_end(&mut self) -> &mut Self {
        self.out.push('>');
        self
    }

    pub fn text(&mut self, t: &str) -> &mut Self {
        self.out.push_str(&quick_xml::escape::escape(t));
        self
    }

    pub fn close(&mut self, name: &str) -> &mut Self {
        self.out.push_str("</");
        self.out.push_str(name);
        self.out.push('>');
        self
    }

    /// `<name>text</name>`
    pub fn leaf(&mut self, name: &str, text: &str) -> &mut Self {
        self.open(name, &[]).open_end().text(text).close(name)
    }

    pub fn finish(self) -> String {
        self.out
    }
}

impl Default for Writer {
    fn default() -> Self {
        Writer::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_reads_into_its_tree_with_entities_resolved() {
        let root = parse(
            br#"<?xml version="1.0"?><CellSet><Row key="cm93"><Cell column="Y2Y6YQ==" timestamp="5">dmFs&amp;&#65;</Cell></Row></CellSet>"#,
        )
        .expect("parses");
        assert_eq!(root.name, "CellSet");
        let row = root.each("Row").next().expect("row");
        assert_eq!(row.attr("key"), Some("cm93"));
        let cell = row.each("Cell").next().expect("cell");
        assert_eq!(cell.attr("timestamp"), Some("5"));
        assert_eq!(cell.text, "dmFs&A");
    }

    #[test]
    fn a_lone_empty_root_is_the_root() {
        let root = parse(br#"<Scanner batch="10"/>"#).expect("parses");
        assert_eq!(root.name, "Scanner");
        assert_eq!(root.attr("batch"), Some("10"));
    }

    #[test]
    fn malformed_and_hostile_bodies_are_refused() {
        for body in [
            &b"<CellSet><Row></CellSet>"[..],
            b"<CellSet>",
            b"",
            b"<!DOCTYPE x [<!ENTITY a \"aaaa\">]><x>&a;</x>",
            b"<x>&nope;</x>",
            b"<a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a><a></a></a></a></a></a></a></a></a></a></a></a></a></a></a></a></a></a></a>",
        ] {
            let e = parse(body).expect_err("refused");
            assert!(e.starts_with("malformed XML"), "{e}");
        }
    }

    #[test]
    fn written_text_and_attributes_are_escaped() {
        let mut w = Writer::new();
        w.open("a", &[("k", "<\"&>")])
            .open_end()
            .text("x<y&z")
            .close("a");
        let s = w.finish();
        assert!(
            s.ends_with("<a k=\"&lt;&quot;&amp;&gt;\">x&lt;y&amp;z</a>"),
            "{s}"
        );
        let back = parse(s.as_bytes()).expect("parses");
        assert_eq!(back.attr("k"), Some("<\"&>"));
        assert_eq!(back.text, "x<y&z");
    }
}
