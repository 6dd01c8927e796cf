//! Representations: which one a response takes (`Accept`, as Jersey chooses among a
//! resource's `@Produces` list) and which one a body is in (`Content-Type`).

use axum::http::HeaderMap;

use crate::rest::RestError;

/// A representation HBase's REST server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `text/xml` (also `application/xml`).
    Xml,
    /// `application/json`.
    Json,
    /// `application/x-protobuf` (also `application/protobuf`).
    Protobuf,
    /// `application/octet-stream`: one cell's value.
    Binary,
    /// `text/plain`.
    Text,
}

impl Format {
    /// The `Content-Type` of a response in this representation.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Xml => "text/xml",
            Format::Json => "application/json",
            Format::Protobuf => "application/x-protobuf",
            Format::Binary => "application/octet-stream",
            Format::Text => "text/plain",
        }
    }

    /// The representation a media type names, `None` for one HBase does not speak.
    fn of(media: &str) -> Option<Format> {
        match media {
            "text/xml" | "application/xml" => Some(Format::Xml),
            "application/json" => Some(Format::Json),
            "application/x-protobuf" | "application/protobuf" => Some(Format::Protobuf),
            "application/octet-stream" => Some(Format::Binary),
            "text/plain" => Some(Format::Text),
            _ => None,
        }
    }
}

/// What most resources produce, in Jersey's order (the first wins for `*/*`).
pub const MODELS: &[Format] = &[Format::Xml, Format::Json, Format::Protobuf];
/// What `/version` and `/version/cluster` produce.
pub const WITH_TEXT: &[Format] = &[Format::Text, Format::Xml, Format::Json, Format::Protobuf];
/// What a row's or a scanner's GET produces: one value as octets (the "default GET" that
/// answers `*/*`, as HBase's REST server does), or the models.
pub const CELLS: &[Format] = &[Format::Binary, Format::Xml, Format::Json, Format::Protobuf];

/// The representation of the answer: the `Accept` entry with the highest quality that
/// `produces` has (ties go to the earlier entry, then to `produces`' order); no `Accept`
/// takes the first.
///
/// # Errors
/// 406 when `Accept` names nothing `produces` has.
pub fn negotiate(headers: &HeaderMap, produces: &[Format]) -> Result<Format, RestError> {
    let accept: Vec<&str> = headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .collect();
    if accept.iter().all(|a| a.trim().is_empty()) {
        return Ok(produces[0]);
    }
    let mut best: Option<(f32, usize, Format)> = None;
    for entry in accept {
        let mut parts = entry.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if q <= 0.0 {
            continue;
        }
        let candidates: Vec<Format> = match media.as_str() {
            "*/*" => produces.to_vec(),
            "text/*" => produces
                .iter()
                .copied()
                .filter(|f| f.content_type().starts_with("text/"))
                .collect(),
            "application/*" => produces
                .iter()
                .copied()
                .filter(|f| f.content_type().starts_with("application/"))
                .collect(),
            m => Format::of(m)
                .filter(|f| produces.contains(f))
                .into_iter()
                .collect(),
        };
        // A wildcard is less specific than a named type of the same quality.
        let specificity = usize::from(!media.contains('*'));
        if let Some(&f) = candidates.first() {
            let better = match best {
                None => true,
                Some((bq, bs, _)) => q > bq || (q == bq && specificity > bs),
            };
            if better {
                best = Some((q, specificity, f));
            }
        }
    }
    best.map(|(_, _, f)| f).ok_or_else(|| {
        RestError::new(
            axum::http::StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the Accept header names no representation this resource has",
        )
    })
}

/// The representation of a request body, by its `Content-Type` (parameters such as
/// `charset` ignored); `consumes` lists what the resource takes.
///
/// # Errors
/// 415 for a missing or unsupported type.
pub fn body_format(headers: &HeaderMap, consumes: &[Format]) -> Result<Format, RestError> {
    let media = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    Format::of(&media)
        .filter(|f| consumes.contains(f))
        .ok_or_else(|| {
            RestError::new(
                axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "Unsupported Media Type: the body's Content-Type '{media}' is not one of {}",
                    consumes
                        .iter()
                        .map(|f| f.content_type())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("accept", HeaderValue::from_str(v).expect("header"));
        h
    }

    #[test]
    fn accept_picks_the_best_representation_the_resource_has() {
        assert_eq!(negotiate(&HeaderMap::new(), MODELS).ok(), Some(Format::Xml));
        assert_eq!(
            negotiate(&HeaderMap::new(), CELLS).ok(),
            Some(Format::Binary)
        );
        assert_eq!(
            negotiate(&accept("*/*"), WITH_TEXT).ok(),
            Some(Format::Text)
        );
        assert_eq!(
            negotiate(&accept("application/json"), MODELS).ok(),
            Some(Format::Json)
        );
        assert_eq!(
            negotiate(&accept("text/xml;q=0.5, application/x-protobuf"), MODELS).ok(),
            Some(Format::Protobuf)
        );
        assert_eq!(
            negotiate(&accept("*/*, application/json"), MODELS).ok(),
            Some(Format::Json)
        );
        assert_eq!(
            negotiate(&accept("application/octet-stream"), CELLS).ok(),
            Some(Format::Binary)
        );
        let e = negotiate(&accept("image/png"), MODELS).expect_err("406");
        assert_eq!(e.status, axum::http::StatusCode::NOT_ACCEPTABLE);
        assert!(negotiate(&accept("application/octet-stream"), MODELS).is_err());
    }

    #[test]
    fn content_type_names_the_body_with_parameters_ignored() {
        let mut h = HeaderMap::new();
        h.insert(
            "content-type",
            HeaderValue::from_static("application/json; charset=UTF-8"),
        );
        assert_eq!(body_format(&h, MODELS).ok(), Some(Format::Json));
        h.insert("content-type", HeaderValue::from_static("text/csv"));
        let e = body_format(&h, MODELS).expect_err("415");
        assert_eq!(e.status, axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert!(body_format(&HeaderMap::new(), MODELS).is_err());
    }
}
