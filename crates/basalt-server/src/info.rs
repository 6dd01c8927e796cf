//! The web page and `/metrics` on the info port (HBase's 16010 and 16030): the cluster
//! (masters, live, dead and decommissioned region servers with their regions and loads,
//! regions in transition), namespaces, tables, regions with their sizes, files, memstores
//! and request counts, the engine's counters and its recent flushes and compactions. A
//! region server's page lists the regions it hosts. Rendered on the server: the page needs
//! no script.

use std::fmt::Write;

use axum::extract::State;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use axum::Router;
use basalt_api::{ClusterStatus, RegionReport};
use basalt_model::bytes_fmt::to_string_binary;
use basalt_model::TableName;

use crate::grpc::Services;
use crate::metrics::{prometheus, EngineView};

/// The info server's routes.
pub fn router(services: Services) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/metrics", get(metrics))
        .with_state(services)
}

async fn metrics(State(s): State<Services>) -> impl IntoResponse {
    let text = tokio::task::spawn_blocking(move || {
        let engine = EngineView::of(s.node.as_ref(), s.hosted.as_deref());
        prometheus(&s.metrics, engine, s.scanners.open_count())
    })
    .await
    .unwrap_or_default();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

async fn page(State(s): State<Services>) -> Html<String> {
    let html = tokio::task::spawn_blocking(move || render(&s))
        .await
        .unwrap_or_else(|e| format!("<p>the page failed: {e}</p>"));
    Html(html)
}

/// Text made safe for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn render(s: &Services) -> String {
    let mut h = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Basalt</title><style>\
         body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}</style></head><body>",
    );
    let _ = write!(h, "<h1>Basalt {}</h1>", env!("CARGO_PKG_VERSION"));
    if let Ok(status) = s.conn.admin().cluster_status() {
        cluster(&mut h, &status);
    }
    match &s.hosted {
        // A region server answers no administration: its own regions are what it knows.
        Some(rs) => {
            let _ = write!(h, "<h2>Region server {}</h2>", esc(&rs.name()));
            let mut by_table: Vec<(TableName, bool, Vec<RegionReport>)> = Vec::new();
            let mut hosted = rs.hosted_regions();
            hosted
                .sort_by(|a, b| (&a.table, &a.info.start_key).cmp(&(&b.table, &b.info.start_key)));
            for r in hosted {
                let report = RegionReport {
                    region: r.info,
                    load: r.load,
                    server: rs.name(),
                };
                match by_table.last_mut() {
                    Some((t, _, regions)) if *t == r.table => regions.push(report),
                    _ => by_table.push((r.table, true, vec![report])),
                }
            }
            tables(&mut h, &by_table);
        }
        None => {
            h.push_str("<h2>Namespaces</h2><ul id=\"namespaces\">");
            for ns in s.conn.admin().list_namespaces().unwrap_or_default() {
                let _ = write!(h, "<li>{}</li>", esc(&ns));
            }
            h.push_str("</ul>");
            tables(&mut h, &all_tables(s));
        }
    }
    engine(&mut h, s);
    events(&mut h, s);
    h.push_str("</body></html>");
    h
}

/// Every table the operation layer lists, with its state and regions.
fn all_tables(s: &Services) -> Vec<(TableName, bool, Vec<RegionReport>)> {
    let admin = s.conn.admin();
    let names = admin.list_tables(None).unwrap_or_default();
    names
        .iter()
        .filter_map(|n| TableName::parse(n).ok())
        .map(|t| {
            let enabled = admin.is_enabled(&t).unwrap_or(false);
            let loads = admin.region_reports(&t).unwrap_or_default();
            (t, enabled, loads)
        })
        .collect()
}

/// The cluster as the active master sees it (a standalone server is a one-server cluster).
fn cluster(h: &mut String, c: &ClusterStatus) {
    let list = |v: &[String]| esc(&v.join(", "));
    let _ = write!(
        h,
        "<h2>Cluster</h2><table id=\"cluster\">\
         <tr><th>Cluster id</th><td id=\"cluster-id\">{}</td></tr>\
         <tr><th>Active master</th><td id=\"active-master\">{}</td></tr>\
         <tr><th>Backup masters</th><td id=\"backup-masters\">{}</td></tr>\
         <tr><th>Balancer</th><td id=\"balancer\">{}</td></tr></table>",
        esc(&c.cluster_id),
        esc(&c.master),
        list(&c.backup_masters),
        if c.balancer_on { "on" } else { "off" },
    );
    h.push_str(
        "<h3>Live region servers</h3><table id=\"live-servers\"><tr><th>Server</th>\
         <th>Regions</th><th>Store files</th><th>Store file bytes</th><th>Memstore bytes</th>\
         <th>Read requests</th><th>Write requests</th><th>Decommissioned</th></tr>",
    );
    for server in &c.servers {
        let l = &server.load;
        let out = c.decommissioned.contains(&server.name);
        let _ = write!(
            h,
            "<tr data-server=\"{0}\"><td>{0}</td><td class=\"regions\">{1}</td><td>{2}</td>\
             <td>{3}</td><td>{4}</td><td>{5}</td><td>{6}</td><td class=\"decommissioned\">{7}</td></tr>",
            esc(&server.name),
            server.regions,
            l.store_files,
            l.store_file_bytes,
            l.memstore_bytes,
            l.read_requests,
            l.write_requests,
            if out { "yes" } else { "no" },
        );
    }
    h.push_str("</table>");
    for (id, title, items) in [
        ("dead-servers", "Dead region servers", &c.dead_servers),
        ("recoveries", "Recoveries in progress", &c.recoveries),
        (
            "decommissioned-servers",
            "Decommissioned region servers",
            &c.decommissioned,
        ),
        (
            "regions-in-transition",
            "Regions in transition",
            &c.in_transition,
        ),
    ] {
        let _ = write!(h, "<h3>{title}</h3><ul id=\"{id}\">");
        for item in items {
            // A region's failure names files; the page never shows the server's paths.
            let item = basalt_model::error::redact_paths(item);
            let _ = write!(h, "<li>{}</li>", esc(&item));
        }
        h.push_str("</ul>");
    }
}

fn tables(h: &mut String, tables: &[(TableName, bool, Vec<RegionReport>)]) {
    h.push_str(
        "<h2>Tables</h2><table id=\"tables\"><tr><th>Table</th><th>State</th><th>Regions</th></tr>",
    );
    let mut regions = String::new();
    for (t, enabled, loads) in tables {
        let name = &t.to_string();
        let state = if *enabled { "ENABLED" } else { "DISABLED" };
        let _ = write!(
            h,
            "<tr data-table=\"{0}\"><td>{0}</td><td>{state}</td><td>{1}</td></tr>",
            esc(name),
            loads.len()
        );
        for RegionReport {
            region: info,
            load,
            server,
        } in loads
        {
            // A region that failed to open (HBase's FAILED_OPEN) says so, and why.
            let state = match &load.failed_open {
                Some(why) => format!(
                    "FAILED_OPEN: {}",
                    esc(&basalt_model::error::redact_paths(why))
                ),
                None => "OPEN".to_owned(),
            };
            let _ = write!(
                regions,
                "<tr data-table=\"{}\"><td>{}</td><td class=\"server\">{}</td><td class=\"state\">{state}</td><td>{}</td><td>{}</td><td class=\"store-files\">{}</td>\
                 <td class=\"store-file-bytes\">{}</td><td class=\"memstore-bytes\">{}</td>\
                 <td class=\"read-requests\">{}</td><td class=\"write-requests\">{}</td></tr>",
                esc(name),
                esc(&info.region_name_string(t)),
                esc(server),
                esc(&to_string_binary(&info.start_key)),
                esc(&to_string_binary(&info.end_key)),
                load.store_files,
                load.store_file_bytes,
                load.memstore_bytes,
                load.read_requests,
                load.write_requests,
            );
        }
    }
    h.push_str(
        "</table><h2>Regions</h2><table id=\"regions\"><tr><th>Region</th><th>Server</th><th>State</th>\
                <th>Start key</th><th>End key</th><th>Store files</th><th>Store file bytes</th>\
                <th>Memstore bytes</th><th>Read requests</th><th>Write requests</th></tr>",
    );
    h.push_str(&regions);
    h.push_str("</table>");
}

/// The engine's counters, when this process runs the node.
fn engine(h: &mut String, s: &Services) {
    let Some(EngineView {
        engine: e,
        cache: c,
    }) = EngineView::of(s.node.as_ref(), s.hosted.as_deref())
    else {
        return;
    };
    let rows = [
        ("memstore-bytes", "Memstore bytes", e.memstore_bytes),
        ("block-cache-bytes", "Block cache bytes", c.size_bytes),
        ("block-cache-hits", "Block cache hits", c.hits),
        ("wal-syncs", "WAL syncs", e.wal_syncs),
        ("flushes", "Flushes", e.flushes),
        (
            "compactions",
            "Compactions",
            e.minor_compactions + e.major_compactions,
        ),
        (
            "open-scanners",
            "Open scanners",
            s.scanners.open_count() as u64,
        ),
    ];
    h.push_str("<h2>Engine</h2><table id=\"engine\">");
    for (id, label, v) in rows {
        let _ = write!(h, "<tr><th>{label}</th><td id=\"{id}\">{v}</td></tr>");
    }
    h.push_str("</table>");
}

fn events(h: &mut String, s: &Services) {
    h.push_str(
        "<h2>Recent flushes and compactions</h2><table id=\"events\"><tr><th>When (ms)</th>\
                <th>What</th><th>Region</th><th>Bytes</th><th>Took (ms)</th></tr>",
    );
    let events = match (&s.node, &s.hosted) {
        (Some(db), _) => Some(db.recent_events()),
        (None, Some(rs)) => Some(rs.recent_events()),
        (None, None) => None,
    };
    for e in events.iter().flatten().rev() {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            e.at_ms,
            e.kind,
            esc(&e.region),
            e.bytes,
            e.duration_ms
        );
    }
    h.push_str("</table>");
}
