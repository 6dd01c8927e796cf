//! Reading command arguments: strings, numbers, option hashes, as the shell's commands do.

use basalt_model::TableName;

use crate::parser::Value;
use crate::ShellError;

/// A command's arguments with helpers to take them in order.
#[derive(Debug)]
pub struct Args {
    values: Vec<Value>,
    at: usize,
}

impl Args {
    #[must_use]
    pub fn new(values: Vec<Value>) -> Args {
        Args { values, at: 0 }
    }

    /// Whether no argument is left.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.at >= self.values.len()
    }

    /// The next argument without taking it.
    #[must_use]
    pub fn peek(&self) -> Option<&Value> {
        self.values.get(self.at)
    }

    /// The next argument.
    pub fn take(&mut self) -> Option<Value> {
        let v = self.values.get(self.at).cloned();
        self.at += 1;
        v
    }

    /// The next argument as bytes (a string, or a number's decimal text, as `to_s` gives).
    ///
    /// # Errors
    /// Missing, or not a scalar.
    pub fn bytes(&mut self, what: &str) -> Result<Vec<u8>, ShellError> {
        match self.take() {
            Some(v) => to_bytes(&v, what),
            None => Err(ShellError::usage(format!(
                "wrong number of arguments: {what} missing"
            ))),
        }
    }

    /// The next argument as text.
    ///
    /// # Errors
    /// As [`Args::bytes`].
    pub fn string(&mut self, what: &str) -> Result<String, ShellError> {
        Ok(String::from_utf8_lossy(&self.bytes(what)?).into_owned())
    }

    /// The next argument as a table name.
    ///
    /// # Errors
    /// Missing, or not a valid name.
    pub fn table(&mut self) -> Result<TableName, ShellError> {
        let s = self.string("table name")?;
        TableName::parse(&s).map_err(ShellError::from)
    }

    /// The next argument when it is an integer.
    pub fn opt_int(&mut self) -> Option<i64> {
        if let Some(Value::Int(n)) = self.peek() {
            let n = *n;
            self.at += 1;
            return Some(n);
        }
        None
    }

    /// The next argument when it is a hash (options), else an empty hash.
    pub fn opt_hash(&mut self) -> Vec<(Value, Value)> {
        if let Some(Value::Hash(h)) = self.peek() {
            let h = h.clone();
            self.at += 1;
            return h;
        }
        Vec::new()
    }

    /// Every argument left.
    pub fn rest(&mut self) -> Vec<Value> {
        let v = self.values[self.at.min(self.values.len())..].to_vec();
        self.at = self.values.len();
        v
    }

    /// Fails when arguments are left over.
    ///
    /// # Errors
    /// Extra arguments.
    pub fn done(&self) -> Result<(), ShellError> {
        if self.at < self.values.len() {
            return Err(ShellError::usage(format!(
                "wrong number of arguments ({} given)",
                self.values.len()
            )));
        }
        Ok(())
    }
}

/// A scalar's bytes.
///
/// # Errors
/// An array or hash.
pub fn to_bytes(v: &Value, what: &str) -> Result<Vec<u8>, ShellError> {
    match v {
        Value::Str(b) => Ok(b.clone()),
        Value::Int(_) | Value::Float(_) | Value::Bool(_) | Value::Const(_) => {
            Ok(v.to_s().into_bytes())
        }
        other => Err(ShellError::usage(format!(
            "{what}: expected a string, got {other}"
        ))),
    }
}

/// A hash key's name: `NAME` or `'NAME'` both name NAME.
#[must_use]
pub fn key_name(k: &Value) -> String {
    match k {
        Value::Const(c) => c.clone(),
        other => other.to_s(),
    }
}

/// The value under `key` in an option hash.
#[must_use]
pub fn get<'a>(h: &'a [(Value, Value)], key: &str) -> Option<&'a Value> {
    h.iter().find(|(k, _)| key_name(k) == key).map(|(_, v)| v)
}

/// An integer option (a number or a numeric string).
///
/// # Errors
/// Not a number.
pub fn int(v: &Value, what: &str) -> Result<i64, ShellError> {
    match v {
        Value::Int(n) => Ok(*n),
        other => other
            .to_s()
            .trim()
            .parse()
            .map_err(|_| ShellError::usage(format!("{what} must be a number, not {other}"))),
    }
}

/// A boolean option (`true`, `'true'`, `'TRUE'`).
///
/// # Errors
/// Not a boolean.
pub fn boolean(v: &Value, what: &str) -> Result<bool, ShellError> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => match other.to_s().to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(ShellError::usage(format!(
                "{what} must be true or false, not {other}"
            ))),
        },
    }
}

/// A string or an array of strings, as byte strings.
///
/// # Errors
/// Anything else.
pub fn list(v: &Value, what: &str) -> Result<Vec<Vec<u8>>, ShellError> {
    match v {
        Value::Array(items) => items.iter().map(|i| to_bytes(i, what)).collect(),
        other => Ok(vec![to_bytes(other, what)?]),
    }
}
