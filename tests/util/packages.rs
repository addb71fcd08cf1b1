//! What the package tests share: the processors a listing names, and JSON a Python script
//! prints about a package.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::{offload, succeed};

/// The processors of the device images `offload ls` lists in `path` (features left out).
pub fn processors(path: &Path) -> BTreeSet<String> {
    let out = succeed(offload().args(["ls", "--json"]).arg(path));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["arch"].as_str())
        .filter(|arch| !arch.is_empty())
        .map(|arch| arch.split(':').next().unwrap().to_string())
        .collect()
}

/// The JSON object the Python `script` prints when given `path`.
pub fn python_json(script: &str, path: &Path) -> serde_json::Map<String, Value> {
    let out = succeed(Command::new("python3").args(["-c", script]).arg(path));
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}
