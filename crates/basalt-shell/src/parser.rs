//! The HBase shell's language: the part of Ruby its commands are written in.
//!
//! ```text
//! statement := [name '='] [name '.'] command [ '(' args ')' | args ]
//! args      := arg {',' arg}
//! arg       := value | value '=>' value          (bare pairs form one trailing hash)
//! value     := 'single' | "double" | number | true | false | nil | CONSTANT | name
//!            | '[' [value {',' value}] ']' | '{' [value '=>' value {',' ...}] '}'
//! ```
//! Statements end at a newline or `;` (a line ending in `,` continues); `#` starts a comment.
//! Double-quoted strings take `\xNN`, `\n`, `\t`, `\r`, `\0`, `\e`, `\\`, `\"` escapes; single-quoted
//! strings only `\\` and `\'` (as Ruby). Strings are bytes: `"\xff"` is one byte.

use std::fmt;

/// A value of the shell language.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Str(Vec<u8>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Nil,
    /// An unquoted capitalized name: `VERSIONS`, `NAME`.
    Const(String),
    /// An unquoted lowercase name: a variable (a table reference).
    Name(String),
    Array(Vec<Value>),
    /// Pairs in written order.
    Hash(Vec<(Value, Value)>),
}

impl Value {
    /// The value as text, as `to_s` gives it (strings lossily as UTF-8).
    #[must_use]
    pub fn to_s(&self) -> String {
        match self {
            Value::Str(b) => String::from_utf8_lossy(b).into_owned(),
            Value::Int(n) => n.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Nil => String::new(),
            Value::Const(c) | Value::Name(c) => c.clone(),
            Value::Array(_) | Value::Hash(_) => format!("{self}"),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(b) => write!(f, "\"{}\"", basalt_model::bytes_fmt::to_string_binary(b)),
            Value::Array(v) => {
                let items: Vec<String> = v.iter().map(ToString::to_string).collect();
                write!(f, "[{}]", items.join(", "))
            }
            Value::Hash(v) => {
                let items: Vec<String> = v.iter().map(|(k, v)| format!("{k}=>{v}")).collect();
                write!(f, "{{{}}}", items.join(", "))
            }
            other => f.write_str(&other.to_s()),
        }
    }
}

/// One statement: `target = receiver.command args`.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// The variable the result is assigned to.
    pub assign: Option<String>,
    /// `t` in `t.put ...`: a table reference.
    pub receiver: Option<String>,
    pub command: String,
    pub args: Vec<Value>,
}

/// A syntax error, worded as the shell words them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError(pub String);

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Str(Vec<u8>),
    Int(i64),
    Float(f64),
    Word(String),
    Sym(&'static str),
    End,
}

/// Splits `src` into statements; an empty statement (a blank line, a comment) is skipped.
///
/// # Errors
/// A syntax error naming what was wrong.
pub fn parse(src: &str) -> Result<Vec<Statement>, SyntaxError> {
    let toks = lex(src)?;
    let mut p = Parser { toks, at: 0 };
    let mut out = Vec::new();
    loop {
        while p.peek() == &Tok::End {
            if p.at >= p.toks.len() {
                return Ok(out);
            }
            p.at += 1;
        }
        if p.at >= p.toks.len() {
            return Ok(out);
        }
        out.push(p.statement()?);
    }
}

/// Whether `src` is an unfinished statement (an open bracket or string, a trailing comma or
/// `=>`): an interactive shell reads another line.
#[must_use]
pub fn is_incomplete(src: &str) -> bool {
    match lex(src) {
        Err(e) => e.0.starts_with("unterminated"),
        Ok(toks) => {
            let mut depth = 0i32;
            for t in &toks {
                match t {
                    Tok::Sym("[" | "{" | "(") => depth += 1,
                    Tok::Sym("]" | "}" | ")") => depth -= 1,
                    _ => {}
                }
            }
            let last = toks.iter().rev().find(|t| **t != Tok::End);
            depth > 0 || matches!(last, Some(Tok::Sym("," | "=>")))
        }
    }
}

fn lex(src: &str) -> Result<Vec<Tok>, SyntaxError> {
    let b = src.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    let mut depth = 0i32;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' => i += 1,
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'\n' | b';' => {
                // Inside brackets, or after a comma or `=>`, a newline continues the statement.
                let continues = depth > 0 || matches!(out.last(), Some(Tok::Sym("," | "=>")));
                if c == b';' || !continues {
                    out.push(Tok::End);
                }
                i += 1;
            }
            b'\'' | b'"' => {
                let (s, next) = lex_string(b, i)?;
                out.push(Tok::Str(s));
                i = next;
            }
            b'=' if b.get(i + 1) == Some(&b'>') => {
                out.push(Tok::Sym("=>"));
                i += 2;
            }
            b'-' | b'0'..=b'9' if c != b'-' || b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let (t, next) = lex_number(src, i)?;
                out.push(t);
                i = next;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let start = i;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'_'
                        || b[i] == b'?'
                        || b[i] == b'!')
                {
                    i += 1;
                }
                out.push(Tok::Word(src[start..i].to_owned()));
            }
            _ => {
                let sym = symbol(c)?;
                depth += match sym {
                    "[" | "{" | "(" => 1,
                    "]" | "}" | ")" => -1,
                    _ => 0,
                };
                // The parser recurses once per level (so do printing and drop): a limit
                // turns a hostile line into an error, not a stack overflow.
                if depth > MAX_NESTING {
                    return Err(SyntaxError(format!(
                        "nested too deeply: more than {MAX_NESTING} levels of brackets"
                    )));
                }
                out.push(Tok::Sym(sym));
                i += 1;
            }
        }
    }
    out.push(Tok::End);
    Ok(out)
}

/// The one-character symbol `c` is.
fn symbol(c: u8) -> Result<&'static str, SyntaxError> {
    Ok(match c {
        b'[' => "[",
        b']' => "]",
        b'{' => "{",
        b'}' => "}",
        b'(' => "(",
        b')' => ")",
        b',' => ",",
        b'=' => "=",
        b'.' => ".",
        _ => {
            return Err(SyntaxError(format!(
                "syntax error, unexpected '{}'",
                char::from(c)
            )))
        }
    })
}

fn lex_string(b: &[u8], start: usize) -> Result<(Vec<u8>, usize), SyntaxError> {
    let quote = b[start];
    let mut i = start + 1;
    let mut s = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c == quote {
            return Ok((s, i + 1));
        }
        if c != b'\\' || i + 1 >= b.len() {
            s.push(c);
            i += 1;
            continue;
        }
        let e = b[i + 1];
        i += 2;
        if quote == b'\'' {
            if e != b'\\' && e != b'\'' {
                s.push(b'\\');
            }
            s.push(e);
            continue;
        }
        match e {
            b'n' => s.push(b'\n'),
            b't' => s.push(b'\t'),
            b'r' => s.push(b'\r'),
            b'0' => s.push(0),
            b'e' => s.push(0x1b),
            b'x' => {
                let hex: Vec<u8> = b[i..]
                    .iter()
                    .take(2)
                    .take_while(|h| h.is_ascii_hexdigit())
                    .copied()
                    .collect();
                if hex.is_empty() {
                    return Err(SyntaxError("invalid hex escape".into()));
                }
                let text = std::str::from_utf8(&hex).unwrap_or("0");
                s.push(u8::from_str_radix(text, 16).unwrap_or(0));
                i += hex.len();
            }
            other => s.push(other),
        }
    }
    Err(SyntaxError("unterminated string meets end of file".into()))
}

fn lex_number(src: &str, start: usize) -> Result<(Tok, usize), SyntaxError> {
    let b = src.as_bytes();
    let mut i = start + 1;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let float = b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit);
    if float {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    let text: String = src[start..i].chars().filter(|c| *c != '_').collect();
    let tok = if float {
        Tok::Float(
            text.parse()
                .map_err(|_| SyntaxError(format!("bad number {text}")))?,
        )
    } else {
        Tok::Int(
            text.parse()
                .map_err(|_| SyntaxError(format!("integer {text} too big")))?,
        )
    };
    Ok((tok, i))
}

/// The deepest nesting of `[`, `{` and `(` a statement may have.
const MAX_NESTING: i32 = 128;

struct Parser {
    toks: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        self.toks.get(self.at).unwrap_or(&Tok::End)
    }

    fn peek_at(&self, n: usize) -> &Tok {
        self.toks.get(self.at + n).unwrap_or(&Tok::End)
    }

    fn next(&mut self) -> Tok {
        let t = self.peek().clone();
        self.at += 1;
        t
    }

    fn expect(&mut self, sym: &'static str) -> Result<(), SyntaxError> {
        match self.next() {
            Tok::Sym(s) if s == sym => Ok(()),
            other => Err(unexpected(&other, sym)),
        }
    }

    fn word(&mut self) -> Result<String, SyntaxError> {
        match self.next() {
            Tok::Word(w) => Ok(w),
            other => Err(unexpected(&other, "a command")),
        }
    }

    fn statement(&mut self) -> Result<Statement, SyntaxError> {
        let mut assign = None;
        if matches!(self.peek(), Tok::Word(_)) && self.peek_at(1) == &Tok::Sym("=") {
            assign = Some(self.word()?);
            self.next();
        }
        let mut command = self.word()?;
        let mut receiver = None;
        if self.peek() == &Tok::Sym(".") {
            self.next();
            receiver = Some(command);
            command = self.word()?;
        }
        let args = if self.peek() == &Tok::Sym("(") {
            self.next();
            let args = self.args(&Tok::Sym(")"))?;
            self.expect(")")?;
            args
        } else {
            self.args(&Tok::End)?
        };
        match self.next() {
            Tok::End => Ok(Statement {
                assign,
                receiver,
                command,
                args,
            }),
            other => Err(unexpected(&other, "the end of the statement")),
        }
    }

    /// Arguments up to `end` (not consumed); bare `k => v` pairs gather into one hash.
    fn args(&mut self, end: &Tok) -> Result<Vec<Value>, SyntaxError> {
        let mut args = Vec::new();
        let mut pairs: Vec<(Value, Value)> = Vec::new();
        if self.peek() == end {
            return Ok(args);
        }
        loop {
            let v = self.value()?;
            if self.peek() == &Tok::Sym("=>") {
                self.next();
                pairs.push((v, self.value()?));
            } else {
                args.push(v);
            }
            if self.peek() != &Tok::Sym(",") {
                break;
            }
            self.next();
        }
        if !pairs.is_empty() {
            args.push(Value::Hash(pairs));
        }
        Ok(args)
    }

    fn value(&mut self) -> Result<Value, SyntaxError> {
        Ok(match self.next() {
            Tok::Str(s) => Value::Str(s),
            Tok::Int(n) => Value::Int(n),
            Tok::Float(f) => Value::Float(f),
            Tok::Word(w) => match w.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                "nil" => Value::Nil,
                _ if w.starts_with(|c: char| c.is_ascii_uppercase()) => Value::Const(w),
                _ => Value::Name(w),
            },
            Tok::Sym("[") => {
                let mut items = Vec::new();
                while self.peek() != &Tok::Sym("]") {
                    items.push(self.value()?);
                    if self.peek() != &Tok::Sym(",") {
                        break;
                    }
                    self.next();
                }
                self.expect("]")?;
                Value::Array(items)
            }
            Tok::Sym("{") => {
                let mut pairs = Vec::new();
                while self.peek() != &Tok::Sym("}") {
                    let k = self.value()?;
                    self.expect("=>")?;
                    pairs.push((k, self.value()?));
                    if self.peek() != &Tok::Sym(",") {
                        break;
                    }
                    self.next();
                }
                self.expect("}")?;
                Value::Hash(pairs)
            }
            other => return Err(unexpected(&other, "a value")),
        })
    }
}

fn unexpected(t: &Tok, wanted: &str) -> SyntaxError {
    let got = match t {
        Tok::Str(_) => "a string".to_owned(),
        Tok::Int(n) => n.to_string(),
        Tok::Float(f) => f.to_string(),
        Tok::Word(w) => w.clone(),
        Tok::Sym(s) => format!("'{s}'"),
        Tok::End => "end of line".to_owned(),
    };
    SyntaxError(format!(
        "syntax error, unexpected {got}, expecting {wanted}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(src: &str) -> Statement {
        let mut v = parse(src).unwrap();
        assert_eq!(v.len(), 1, "{v:?}");
        v.remove(0)
    }

    fn s(x: &str) -> Value {
        Value::Str(x.as_bytes().to_vec())
    }

    #[test]
    fn commands_with_strings_numbers_and_hashes() {
        let st = one("create 'ns1:t1', {NAME => 'f1', VERSIONS => 5}");
        assert_eq!(st.command, "create");
        assert_eq!(
            st.args,
            [
                s("ns1:t1"),
                Value::Hash(vec![
                    (Value::Const("NAME".into()), s("f1")),
                    (Value::Const("VERSIONS".into()), Value::Int(5)),
                ])
            ]
        );
        let st = one("alter 't1', NAME => 'f1', VERSIONS => 5");
        assert_eq!(st.args.len(), 2);
        assert!(matches!(&st.args[1], Value::Hash(p) if p.len() == 2));
        let st = one("put 't1', 'r1', 'c1', 'value', 1421762485768");
        assert_eq!(st.args[4], Value::Int(1_421_762_485_768));
        let st = one("get('t1', 'r1', ['c1', 'c2'])");
        assert_eq!(st.args[2], Value::Array(vec![s("c1"), s("c2")]));
    }

    #[test]
    fn escapes_follow_ruby() {
        let st = one(r#"get 't1', "key\x03\x3f\xcd", 'a\'b\n'"#);
        assert_eq!(
            st.args[1],
            Value::Str(vec![b'k', b'e', b'y', 3, 0x3f, 0xcd])
        );
        assert_eq!(st.args[2], Value::Str(b"a'b\\n".to_vec()));
    }

    #[test]
    fn statements_assignments_receivers_comments() {
        let v =
            parse("t = create 't1', 'f1' # a table\nt.put 'r1', 'f1:a', 'v'; list\n\n").unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].assign.as_deref(), Some("t"));
        assert_eq!(v[1].receiver.as_deref(), Some("t"));
        assert_eq!(v[1].command, "put");
        assert_eq!(v[2].command, "list");
        // A statement continues after a comma or inside brackets.
        let v = parse("scan 't1', {\n COLUMNS => ['a',\n 'b'],\n LIMIT => 10 }").unwrap();
        assert_eq!(v.len(), 1);
        assert!(is_incomplete("scan 't1', {"));
        assert!(is_incomplete("put 't1',"));
        assert!(is_incomplete("put 't1', 'r"));
        assert!(!is_incomplete("list"));
    }

    #[test]
    fn syntax_errors_are_clear() {
        let e = parse("create 't1' 'f1'").unwrap_err();
        assert!(e.0.contains("unexpected a string"), "{e}");
        assert!(parse("get 't1', {NAME 'x'}").is_err());
        assert!(parse("put 'a', @").is_err());
    }

    /// RELIABILITY.md D17: deeply nested literals and filters are errors, not a crash.
    #[test]
    fn deep_nesting_is_a_syntax_error_not_a_stack_overflow() {
        let run = || {
            let ok = format!(
                "put 't', 'r', 'f:q', {}1{}",
                "[".repeat(100),
                "]".repeat(100)
            );
            assert!(parse(&ok).is_ok());
            for hostile in [
                format!("scan 't', {}", "{A => ".repeat(100_000)),
                format!("put 't', {}", "[".repeat(100_000)),
                format!("get {}", "(".repeat(100_000)),
            ] {
                let e = parse(&hostile).unwrap_err();
                assert!(e.0.contains("nested too deeply"), "{e}");
                // The REPL reports it at once instead of waiting for the brackets to close.
                assert!(!is_incomplete(&hostile));
            }
        };
        std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(run)
            .unwrap()
            .join()
            .unwrap();
    }
}
