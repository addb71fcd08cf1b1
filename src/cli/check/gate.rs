//! What `check --require` prints: a table of files against the required targets, a line per
//! failure, and a last line saying how the gate ended; or GitHub annotations.

use crate::ops::check::require::Gate;

/// The table (files down, required targets across), then the verdict line.
pub(super) fn table(gate: &Gate, errors: usize) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut head = vec!["FILE".to_string()];
    head.extend(gate.required.iter().map(|r| r.written.clone()));
    rows.push(head);
    for file in &gate.files {
        let mut row = vec![crate::io::shown(&file.path).into_owned()];
        row.extend(file.verdicts.iter().map(|v| {
            if v.ok {
                v.loads.clone()
            } else {
                "MISSING".to_string()
            }
        }));
        rows.push(row);
    }
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, &w)| format!("{cell:<w$}"))
            .collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    for line in failures(gate) {
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str(&last_line(gate, errors));
    text
}

/// One line per failing verdict: the file, the target and why.
fn failures(gate: &Gate) -> Vec<String> {
    let mut lines = Vec::new();
    for file in &gate.files {
        for v in file.verdicts.iter().filter(|v| !v.ok) {
            let Some(r) = gate.required.get(v.requirement) else {
                continue;
            };
            lines.push(format!(
                "{}: {} is required: {}",
                crate::io::shown(&file.path),
                named(&r.target, &r.written),
                v.why.as_deref().unwrap_or("no code")
            ));
        }
    }
    lines
}

/// A required target as the messages name it: its device, and the item as written when that
/// differs (`sm_90 (9.0+PTX)`).
fn named(target: &str, written: &str) -> String {
    if target == written {
        target.to_string()
    } else {
        format!("{target} ({written})")
    }
}

/// The last line: which way the gate ended, and so the exit status.
pub(super) fn last_line(gate: &Gate, errors: usize) -> String {
    let targets = gate.required.len();
    let files = gate.files.len();
    let mut line = format!(
        "required: {targets} target{} against {files} file{} with device code: ",
        if targets == 1 { "" } else { "s" },
        if files == 1 { "" } else { "s" }
    );
    match (gate.failures, errors) {
        (0, 0) => line.push_str("every one present (exit 0)"),
        (f, 0) => line.push_str(&format!("{f} missing (exit 1)")),
        (0, e) => line.push_str(&format!(
            "none missing, but {e} file(s) could not be read (exit 2)"
        )),
        (f, e) => line.push_str(&format!(
            "{f} missing, and {e} file(s) could not be read (exit 2)"
        )),
    }
    line.push('\n');
    line
}

/// GitHub Actions annotations: an error per failing verdict (and per file that could not be
/// read, from `errors`), then the last line as a notice.
pub(super) fn github(gate: &Gate, errors: &[String]) -> String {
    let escape = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let escape_property = |s: &str| escape(s).replace(':', "%3A").replace(',', "%2C");
    let mut text = String::new();
    for file in &gate.files {
        for v in file.verdicts.iter().filter(|v| !v.ok) {
            let Some(r) = gate.required.get(v.requirement) else {
                continue;
            };
            text.push_str(&format!(
                "::error file={},title=offload check::{} is required: {}\n",
                escape_property(&crate::io::shown(&file.path)),
                escape(&named(&r.target, &r.written)),
                escape(v.why.as_deref().unwrap_or("no code"))
            ));
        }
    }
    for e in errors {
        text.push_str(&format!("::error title=offload check::{}\n", escape(e)));
    }
    let last = last_line(gate, errors.len());
    let kind = if gate.failures == 0 && errors.is_empty() {
        "notice"
    } else {
        "error"
    };
    text.push_str(&format!(
        "::{kind} title=offload check::{}\n",
        escape(last.trim_end())
    ));
    text
}
