//! Standing in for what a request leaves out (see `schema`): the input protocol tells this
//! which structs it opens and which fields it reads; when a struct ends without fields that
//! have a meaning when absent, this hands the generated decoder those fields with their
//! stand-in values, then the struct's end.

use std::collections::VecDeque;

use thrift::protocol::TType;

use super::schema::{arguments, child_kind, field_defaults, Arg, Kind, Value};

thread_local! {
    /// The arguments left out of the request just decoded on this thread, by field id (bit
    /// `1 << id`); see [`take_absent_arguments`].
    static ABSENT_ARGUMENTS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The arguments (as bits `1 << field id`) the request being handled on this thread left out.
pub(crate) fn take_absent_arguments() -> u32 {
    ABSENT_ARGUMENTS.with(|c| c.replace(0))
}

/// One open struct: its kind, the field ids read so far (bit `1 << id`), the kind of the
/// structs of the field its parent was reading when it began, and, once its end was read,
/// the missing fields still to hand out before that end.
#[derive(Debug)]
struct Open {
    kind: Kind,
    seen: u32,
    parent_field: Kind,
    queue: VecDeque<(i16, Value)>,
    ending: bool,
}

/// The stand-in state of one request.
#[derive(Debug)]
pub(crate) struct StandIn {
    open: Vec<Open>,
    /// The kind of the structs inside the field being read in the innermost open struct.
    field: Kind,
    /// The value the next read returns: that of the field header just handed out.
    value: Option<Value>,
    /// A stood-in struct was begun: it ends at once.
    empty_struct: bool,
}

impl Default for StandIn {
    fn default() -> Self {
        StandIn {
            open: Vec::new(),
            field: Kind::Other,
            value: None,
            empty_struct: false,
        }
    }
}

impl StandIn {
    /// A new request: nothing open, nothing absent.
    pub(crate) fn reset(&mut self) {
        *self = StandIn::default();
        ABSENT_ARGUMENTS.with(|c| c.set(0));
    }

    /// A struct begins (the outermost one is the arguments).
    pub(crate) fn struct_begin(&mut self) {
        if matches!(self.value, Some(Value::Empty(Arg::Struct))) {
            self.value = None;
            self.empty_struct = true;
        }
        let kind = if self.open.is_empty() {
            Kind::Args
        } else {
            self.field
        };
        self.open.push(Open {
            kind,
            seen: 0,
            parent_field: self.field,
            queue: VecDeque::new(),
            ending: false,
        });
        self.field = Kind::Other;
    }

    pub(crate) fn struct_end(&mut self) {
        if let Some(o) = self.open.pop() {
            self.field = o.parent_field;
        }
    }

    /// The next field header while standing in, if any: the end of a stood-in struct, the
    /// next missing field, or the end of the struct they were missing from.
    pub(crate) fn next_header(&mut self, method: &str) -> Option<(TType, Option<i16>)> {
        if self.value.is_some() {
            return None;
        }
        if std::mem::take(&mut self.empty_struct) {
            return self.end(method, false);
        }
        let o = self.open.last_mut().filter(|o| o.ending)?;
        match o.queue.pop_front() {
            Some((id, v)) => {
                self.field = child_kind(method, o.kind, id);
                self.value = Some(v);
                Some((wire_type(v), Some(id)))
            }
            None => {
                o.ending = false;
                Some((TType::Stop, None))
            }
        }
    }

    /// A field header read from the request (`None`: the struct's end).
    pub(crate) fn header(&mut self, method: &str, id: Option<i16>) -> Option<(TType, Option<i16>)> {
        match id {
            Some(id) => {
                if let Some(o) = self.open.last_mut() {
                    if (0..32).contains(&id) {
                        o.seen |= 1 << id;
                    }
                    self.field = child_kind(method, o.kind, id);
                }
                None
            }
            None => self.end(method, true),
        }
    }

    /// A struct ended: queue its missing fields, and hand out the first (or the end when
    /// none is missing and the end was not read from the request).
    fn end(&mut self, method: &str, read_from_request: bool) -> Option<(TType, Option<i16>)> {
        let o = self.open.last_mut()?;
        let seen = o.seen;
        let missing: VecDeque<(i16, Value)> = match o.kind {
            Kind::Args => {
                let args = arguments(method).unwrap_or_default();
                let m: VecDeque<_> = args
                    .iter()
                    .filter(|(id, _)| seen & (1 << id) == 0)
                    .map(|(id, a)| (*id, Value::Empty(*a)))
                    .collect();
                let bits = m.iter().fold(0u32, |b, (id, _)| b | 1 << id);
                ABSENT_ARGUMENTS.with(|c| c.set(bits));
                m
            }
            kind => field_defaults(kind)
                .iter()
                .filter(|(id, _)| seen & (1 << id) == 0)
                .copied()
                .collect(),
        };
        if missing.is_empty() && read_from_request {
            return None;
        }
        o.queue = missing;
        o.ending = true;
        self.next_header(method)
    }

    /// Takes the stood-in value the decoder now reads.
    pub(crate) fn take(&mut self) -> Option<Value> {
        self.value.take()
    }
}

fn wire_type(v: Value) -> TType {
    match v {
        Value::Empty(Arg::Bytes) | Value::Text(_) => TType::String,
        Value::Empty(Arg::Texts | Arg::Structs) => TType::List,
        Value::Empty(Arg::Attributes) => TType::Map,
        Value::Empty(Arg::I32) | Value::I32(_) => TType::I32,
        Value::Empty(Arg::I64) => TType::I64,
        Value::Empty(Arg::Struct) => TType::Struct,
        Value::Bool(_) => TType::Bool,
    }
}
