//! The layout holds: every `crate::` path in `src/` (in `use` lines and in code, inline tests
//! aside) goes along an arrow `ARCHITECTURE.md` allows, no two files import each other, no
//! function is over 100 lines unless `ARCHITECTURE.md` lists it, and no file holds more than
//! 1,000 lines of code besides its inline tests.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::util::root;

/// The longest a function may be unless listed.
const LONGEST_FUNCTION: usize = 100;
/// The most lines of code a file may hold, its inline tests aside.
const LONGEST_FILE: usize = 1000;

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// The module path of a file under `src/`: `src/format/kpack/mod.rs` is `format::kpack`.
fn module_of(relative: &Path) -> String {
    let mut parts: Vec<String> = relative
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// The file's code before its inline tests, without comment lines.
fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let end = (0..lines.len())
        .find(|&i| {
            lines[i].trim() == "#[cfg(test)]"
                && lines[i + 1..]
                    .iter()
                    .take(3)
                    .any(|l| l.trim_start().starts_with("mod "))
        })
        .unwrap_or(lines.len());
    lines[..end]
        .iter()
        .filter(|l| !l.trim_start().starts_with("//"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every module path the code names after `crate::`, braces of `use` lines expanded one
/// level (`crate::a::{b, c::d}` names `a::b` and `a::c::d`).
fn paths_named(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let bytes = code.as_bytes();
    let mut at = 0;
    while let Some(i) = code[at..].find("crate::") {
        let start = at + i;
        at = start + "crate::".len();
        let before = start.checked_sub(1).map(|b| bytes[b]);
        if before.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') {
            continue;
        }
        let rest = &code[at..];
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let path = rest[..len].trim_end_matches(':').to_string();
        if rest[len..].starts_with('{') && rest[..len].ends_with("::") {
            let group = &rest[len + 1..rest[len..].find('}').map_or(rest.len(), |e| len + e)];
            for item in group.split(',') {
                let item = item.trim().split(" as ").next().unwrap_or("").trim();
                let item = item.split("::{").next().unwrap_or("");
                if !item.is_empty() && item != "self" {
                    found.insert(format!("{path}::{item}"));
                }
            }
        }
        found.insert(path);
    }
    found
}

/// The layers each layer may use, as `ARCHITECTURE.md` lists them under "Arrows".
fn allowed_arrows(document: &str) -> BTreeMap<String, Vec<String>> {
    section(document, "## Arrows")
        .filter_map(|line| line.strip_prefix("- "))
        .filter_map(|line| line.split_once("->"))
        .map(|(from, to)| {
            let to = to
                .split(',')
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect();
            (from.trim().to_string(), to)
        })
        .collect()
}

/// The lines of the section of `document` under `heading`.
fn section<'d>(document: &'d str, heading: &'d str) -> impl Iterator<Item = &'d str> {
    document
        .lines()
        .skip_while(move |l| l.trim() != heading)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
}

/// The files of `src/`: each one's module path, text and code.
struct Source {
    module: String,
    path: String,
    text: String,
    code: String,
}

fn sources() -> Vec<Source> {
    let src = root().join("src");
    rust_files(&src)
        .into_iter()
        .map(|file| {
            let relative = file.strip_prefix(&src).unwrap().to_path_buf();
            let text = fs::read_to_string(&file).unwrap();
            Source {
                module: module_of(&relative),
                path: format!("src/{}", relative.display()),
                code: code_of(&text),
                text,
            }
        })
        .collect()
}

/// The file each module path names: the longest module path that is a file.
fn file_named<'s>(modules: &'s BTreeMap<String, String>, path: &str) -> Option<(&'s str, &'s str)> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len()).rev().find_map(|n| {
        let module = parts[..n].join("::");
        modules
            .get_key_value(&module)
            .map(|(m, f)| (m.as_str(), f.as_str()))
    })
}

#[test]
fn every_arrow_is_allowed_and_no_two_files_import_each_other() {
    let document = fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let allowed = allowed_arrows(&document);
    assert!(
        allowed.len() >= 10,
        "the Arrows section lists too few layers: {allowed:?}"
    );
    let sources = sources();
    let modules: BTreeMap<String, String> = sources
        .iter()
        .map(|s| (s.module.clone(), s.path.clone()))
        .collect();
    let mut problems = Vec::new();
    let mut imports: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for source in &sources {
        let layer = source.module.split("::").next().unwrap_or("");
        for named in paths_named(&source.code) {
            let Some((module, file)) = file_named(&modules, &named) else {
                continue;
            };
            if file != source.path {
                imports.entry(&source.path).or_default().insert(file);
            }
            let to = module.split("::").next().unwrap_or("");
            if layer.is_empty() || to == layer {
                continue;
            }
            let Some(may) = allowed.get(layer) else {
                problems.push(format!(
                    "{}: layer '{layer}' is not in ARCHITECTURE.md",
                    source.path
                ));
                continue;
            };
            let fine = may
                .iter()
                .any(|m| module == m || module.starts_with(&format!("{m}::")));
            if !fine {
                problems.push(format!(
                    "{}: {layer} -> crate::{named}, not allowed",
                    source.path
                ));
            }
        }
    }
    for cycle in cycles(&imports) {
        problems.push(format!(
            "these files import each other in a cycle: {}",
            cycle.join(", ")
        ));
    }
    problems.dedup();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The cycles of `imports` (file -> files it imports): its strongly connected components of
/// more than one file, each sorted, found by Tarjan's algorithm.
fn cycles<'a>(imports: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct Walk<'m, 'a> {
        imports: &'m BTreeMap<&'a str, BTreeSet<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<&'a str>>,
    }
    impl<'a> Walk<'_, 'a> {
        fn visit(&mut self, file: &'a str) {
            let n = self.index.len();
            self.index.insert(file, n);
            self.low.insert(file, n);
            self.stack.push(file);
            self.on_stack.insert(file);
            let next: Vec<&'a str> = self
                .imports
                .get(file)
                .map(|uses| uses.iter().copied().collect())
                .unwrap_or_default();
            for to in next {
                if !self.index.contains_key(to) {
                    self.visit(to);
                    let low = self.low[file].min(self.low[to]);
                    self.low.insert(file, low);
                } else if self.on_stack.contains(to) {
                    let low = self.low[file].min(self.index[to]);
                    self.low.insert(file, low);
                }
            }
            if self.low[file] == self.index[file] {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.push(top);
                    if top == file {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        imports,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for &file in imports.keys() {
        if !walk.index.contains_key(file) {
            walk.visit(file);
        }
    }
    walk.found
}

/// Every function of `text` with its first line's number and its length in lines: from its
/// signature to the brace that closes its body, braces matched as the compiler matches them
/// (those in strings, characters and comments left out).
fn functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let depths = brace_depths(text);
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(name) = function_name(lines[i].trim_start()) else {
            i += 1;
            continue;
        };
        // The body opens at the first `{` after the signature, unless a `;` ends it first.
        let Some((open, depth)) = body_start(&depths, i) else {
            i += 1;
            continue;
        };
        let close = (open..lines.len())
            .find(|&j| depths[j].iter().any(|&(d, opening)| !opening && d == depth))
            .unwrap_or(lines.len() - 1);
        found.push((name, i + 1, close - i + 1));
        i = close + 1;
    }
    found
}

/// Where the body of the function whose signature starts on line `from` opens: the line and
/// the depth its `{` opens; `None` for a declaration (a `;` first).
fn body_start(depths: &[Vec<(usize, bool)>], from: usize) -> Option<(usize, usize)> {
    for (j, marks) in depths.iter().enumerate().skip(from) {
        if let Some(&(depth, _)) = marks.iter().find(|(_, opening)| *opening) {
            return Some((j, depth));
        }
        if marks.iter().any(|&(d, _)| d == usize::MAX) {
            return None;
        }
    }
    None
}

/// Per line of `text`, its braces: the depth each opens (`true`) or closes (`false`) at; a
/// `;` outside any parenthesis is marked `(usize::MAX, false)`. Strings, characters and
/// comments are skipped.
fn brace_depths(text: &str) -> Vec<Vec<(usize, bool)>> {
    let chars: Vec<char> = text.chars().collect();
    let mut lines = vec![Vec::new()];
    let (mut depth, mut parens, mut k) = (0usize, 0usize, 0usize);
    while k < chars.len() {
        let c = chars[k];
        let next = chars.get(k + 1).copied();
        match c {
            '\n' => lines.push(Vec::new()),
            '/' if next == Some('/') => {
                while k + 1 < chars.len() && chars[k + 1] != '\n' {
                    k += 1;
                }
            }
            '/' if next == Some('*') => {
                k += 2;
                while k + 1 < chars.len() && !(chars[k] == '*' && chars[k + 1] == '/') {
                    if chars[k] == '\n' {
                        lines.push(Vec::new());
                    }
                    k += 1;
                }
                k += 1;
            }
            '"' => k = skip_string(&chars, k, &mut lines),
            'r' if next == Some('#') || (next == Some('"') && !word_before(&chars, k)) => {
                k = skip_raw_string(&chars, k, &mut lines);
            }
            '\'' => k = skip_char(&chars, k),
            '(' | '[' => parens += 1,
            ')' | ']' => parens = parens.saturating_sub(1),
            '{' => {
                lines.last_mut().unwrap().push((depth, true));
                depth += 1;
            }
            '}' => {
                depth = depth.saturating_sub(1);
                lines.last_mut().unwrap().push((depth, false));
            }
            ';' if parens == 0 => lines.last_mut().unwrap().push((usize::MAX, false)),
            _ => {}
        }
        k += 1;
    }
    lines
}

/// Whether the character before `k` continues a word (so `r` there is no raw string's).
fn word_before(chars: &[char], k: usize) -> bool {
    k > 0 && (chars[k - 1].is_alphanumeric() || chars[k - 1] == '_')
}

/// The index of the `"` that ends the string opening at `k`, new lines counted into `lines`.
fn skip_string(chars: &[char], mut k: usize, lines: &mut Vec<Vec<(usize, bool)>>) -> usize {
    k += 1;
    while k < chars.len() && chars[k] != '"' {
        if chars[k] == '\\' {
            k += 1;
        }
        if chars.get(k) == Some(&'\n') {
            lines.push(Vec::new());
        }
        k += 1;
    }
    k
}

/// The index of the last character of the raw string (`r"..."`, `r#"..."#`) opening at `k`.
fn skip_raw_string(chars: &[char], mut k: usize, lines: &mut Vec<Vec<(usize, bool)>>) -> usize {
    k += 1;
    let mut hashes = 0;
    while chars.get(k) == Some(&'#') {
        hashes += 1;
        k += 1;
    }
    if chars.get(k) != Some(&'"') {
        return k - 1;
    }
    k += 1;
    while k < chars.len() {
        if chars[k] == '"' && (1..=hashes).all(|h| chars.get(k + h) == Some(&'#')) {
            return k + hashes;
        }
        if chars[k] == '\n' {
            lines.push(Vec::new());
        }
        k += 1;
    }
    k
}

/// The index of the last character of the character literal (or lifetime) at `k`.
fn skip_char(chars: &[char], k: usize) -> usize {
    match (chars.get(k + 1), chars.get(k + 2), chars.get(k + 3)) {
        (Some('\\'), _, _) => (k + 2..chars.len())
            .find(|&j| chars[j] == '\'')
            .unwrap_or(k),
        (Some(_), Some('\''), _) => k + 2,
        _ => k,
    }
}

/// The name of the function a line starts, if it does.
fn function_name(line: &str) -> Option<String> {
    let mut rest = line;
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
        "extern \"C\" ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
    Some(rest[..end].to_string())
}

#[test]
fn functions_and_files_stay_short() {
    let document = fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let listed: BTreeSet<String> = section(&document, "## Functions allowed over 100 lines")
        .filter_map(|l| l.strip_prefix("- "))
        .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
        .collect();
    let mut problems = Vec::new();
    for source in sources() {
        for (name, line, len) in functions(&source.text) {
            let key = format!("{}::{name}", source.path);
            if len > LONGEST_FUNCTION && !listed.contains(&key) {
                problems.push(format!("{}:{line}: {name} is {len} lines", source.path));
            }
        }
        let code = source.code.lines().filter(|l| !l.trim().is_empty()).count();
        if code > LONGEST_FILE {
            problems.push(format!("{}: {code} lines of code", source.path));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_folder_table_names_every_file() {
    let document = fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let rows: BTreeMap<String, String> = section(&document, "## What each folder holds")
        .filter_map(|line| {
            let rest = line.strip_prefix("| `")?;
            let (folder, row) = rest.split_once("/` |")?;
            Some((folder.to_string(), row.to_string()))
        })
        .collect();
    let mut missing = BTreeSet::new();
    for source in sources() {
        let relative = source.path.strip_prefix("src/").unwrap_or(&source.path);
        let mut parts = relative.split('/');
        let (Some(folder), Some(first)) = (parts.next(), parts.next()) else {
            continue;
        };
        let name = first.strip_suffix(".rs").unwrap_or(first);
        if name == "mod" {
            continue;
        }
        let named = rows.get(folder).is_some_and(|row| {
            row.contains(&format!("`{name}`"))
                || row.contains(&format!("`{name}/"))
                || row.contains(&format!("`{name} "))
        });
        if !named {
            missing.insert(format!("{folder}/{name}"));
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's folder table does not name: {missing:?}"
    );
}

#[test]
fn the_checks_see_what_they_look_for() {
    let code = "use crate::format::{bundle, kpack::msgpack::Value};\nlet x = crate::io::Input::open(p);\nlet y = Xcrate::no;";
    let named = paths_named(code);
    assert!(named.contains("format::bundle"), "{named:?}");
    assert!(named.contains("format::kpack::msgpack::Value"), "{named:?}");
    assert!(named.contains("io::Input::open"), "{named:?}");
    assert!(!named.iter().any(|n| n.starts_with("no")), "{named:?}");
    let text = "fn a() {\n    x();\n}\n\n    pub(crate) fn b(\n        y: u8,\n    ) -> u8 {\n        y\n    }\nfn c();\nfn d() { let s = \"}\"; let c = '{'; // }\n    if x { y } }\n";
    let found: Vec<(String, usize)> = functions(text)
        .into_iter()
        .map(|(n, _, l)| (n, l))
        .collect();
    assert_eq!(
        found,
        [
            ("a".to_string(), 3),
            ("b".to_string(), 5),
            ("d".to_string(), 2)
        ]
    );
    assert_eq!(module_of(Path::new("format/kpack/mod.rs")), "format::kpack");
    // A cycle of three files, and one of two, beside files that import without a cycle.
    let mut imports: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (a, b) in [
        ("a.rs", "b.rs"),
        ("b.rs", "c.rs"),
        ("c.rs", "a.rs"),
        ("d.rs", "a.rs"),
        ("e.rs", "f.rs"),
        ("f.rs", "e.rs"),
        ("g.rs", "e.rs"),
    ] {
        imports.entry(a).or_default().insert(b);
    }
    assert_eq!(
        cycles(&imports),
        [vec!["a.rs", "b.rs", "c.rs"], vec!["e.rs", "f.rs"]]
    );
}
