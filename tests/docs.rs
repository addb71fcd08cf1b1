//! The documentation against the binary it describes: every subcommand `offload --help` lists
//! has its page under docs/commands/, every option a command's help prints is on that page,
//! every relative link in README.md and docs/ leads to a file (and an anchor to a heading), and
//! the README's first command works on a fresh clone and its test run is CI's; and every
//! public module of the library has an example in its module docs (which `cargo test --doc`
//! runs). Every command of the README's blocks is run in tests/readme.rs.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{offload, offload_extract, root, text_output};

/// Subcommands the top-level help names only inside another's line, not in a line of their own
/// (none: the list is made from the one registry of commands, a line each).
const NAMED_IN_ANOTHER_LINE: &[&str] = &[];

/// Pages of things that are not subcommands, which the README and the other pages link to.
const OTHER_COMMAND_PAGES: &[&str] = &["linker-plugin"];

/// Files the documentation may link to though they are not there (none).
const ADDED_ELSEWHERE: &[&str] = &[];

/// The standard output of `command`, which must succeed.
fn help_text(command: &mut std::process::Command) -> String {
    let (code, out, err) = text_output(command);
    assert_eq!(code, 0, "{command:?}: {err}");
    out
}

/// The subcommands in the COMMANDS list of `offload --help`, `help` aside, then those the
/// list names inside another line.
fn subcommands() -> Vec<String> {
    let help = help_text(offload().arg("--help"));
    let mut names: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("COMMANDS:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect();
    assert!(names.len() >= 10, "offload --help lists {names:?}");
    for name in NAMED_IN_ANOTHER_LINE {
        assert!(help.contains(name), "offload --help no longer names {name}");
        names.push(name.to_string());
    }
    names
}

fn page(name: &str) -> PathBuf {
    root().join("docs/commands").join(format!("{name}.md"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The long options at the start of the lines of a help text: clap's `  -r, --recursive`,
/// `      --json` and LLVM's `  --bundle-align=<uint>   - ...`, `  --###`.
fn long_options(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = match line.as_bytes() {
                [b'-', c, b',', b' ', ..] if c.is_ascii_alphanumeric() => &line[4..],
                _ => line,
            };
            let rest = line.strip_prefix("--")?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '#')
                .collect();
            (!name.is_empty()).then(|| format!("--{name}"))
        })
        .collect()
}

/// Whether `text` names `option` whole: `--follow` is not found in `--follow-links`.
fn names_option(text: &str, option: &str) -> bool {
    text.match_indices(option).any(|(at, _)| {
        let next = text[at + option.len()..].chars().next();
        !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '#')
    })
}

#[test]
fn every_subcommand_has_its_page() {
    let missing: Vec<String> = subcommands()
        .into_iter()
        .chain(OTHER_COMMAND_PAGES.iter().map(|s| s.to_string()))
        .filter(|name| !page(name).is_file())
        .collect();
    assert!(
        missing.is_empty(),
        "no page under docs/commands/ for {missing:?}"
    );
}

/// The help texts of each page: the subcommands' own `--help`, and the personalities' LLVM
/// help as each release they stand in for prints it.
fn help_texts() -> Vec<(String, String)> {
    let mut texts = Vec::new();
    let personalities = ["bundler", "packager", "wrapper"];
    for name in subcommands() {
        if personalities.contains(&name.as_str()) {
            continue;
        }
        texts.push((name.clone(), help_text(offload().args([&name, "--help"]))));
    }
    texts.push(("extract".into(), help_text(offload_extract().arg("--help"))));
    for release in ["19", "22"] {
        let llvm =
            |args: &[&str]| help_text(offload().args(args).env("OFFLOAD_LLVM_VERSION", release));
        texts.push(("bundler".into(), llvm(&["bundler", "-help"])));
        texts.push(("packager".into(), llvm(&["packager", "--help"])));
        texts.push(("wrapper".into(), llvm(&["wrapper", "--help"])));
        texts.push(("wrapper".into(), llvm(&["wrapper", "--kind=hip", "--help"])));
    }
    texts
}

#[test]
fn every_option_of_a_command_s_help_is_on_its_page() {
    let mut missing = Vec::new();
    for (name, help) in help_texts() {
        let options = long_options(&help);
        assert!(
            !options.is_empty(),
            "no options read from {name}'s help:\n{help}"
        );
        let text = read(&page(&name));
        missing.extend(
            options
                .into_iter()
                .filter(|option| !names_option(&text, option))
                .map(|option| format!("docs/commands/{name}.md: {option}")),
        );
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "options missing: {missing:#?}");
}

/// README.md and every page under docs/.
fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut out = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut out);
    out
}

/// The text of a Markdown document outside code blocks and code spans, line by line.
fn prose_lines(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let spans: Vec<&str> = line.split('`').collect();
        let outside: String = spans
            .iter()
            .step_by(2)
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        lines.push(outside);
    }
    lines
}

/// The link targets of a Markdown document: `[text](target)`.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose_lines(text) {
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// The anchors of a Markdown document's headings, as GitHub makes them: the heading's text in
/// lowercase, spaces made `-`, every character but letters, digits, `-` and `_` dropped, and a
/// repeated anchor numbered from 1.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let mut anchor = slug.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{slug}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

/// `path` with its `..` and `.` components resolved by name, for a file that may not exist.
fn normalized(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading() {
    let root = root();
    let mut broken = Vec::new();
    let documents = documents();
    assert!(documents.len() > 10, "{documents:?}");
    for document in &documents {
        let text = read(document);
        let folder = document.parent().unwrap();
        let shown = document.strip_prefix(&root).unwrap().display().to_string();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                document.clone()
            } else {
                folder.join(path)
            };
            if !target.exists() {
                let added_elsewhere = normalized(&target)
                    .strip_prefix(&root)
                    .is_ok_and(|p| ADDED_ELSEWHERE.iter().any(|a| p == Path::new(a)));
                if !added_elsewhere {
                    broken.push(format!("{shown}: {link}: no such file"));
                }
                continue;
            }
            if !anchor.is_empty() && !anchors(&read(&target)).contains(anchor) {
                broken.push(format!("{shown}: {link}: no such heading"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links: {broken:#?}");
}

#[test]
fn the_targets_page_has_every_row_of_the_processor_table() {
    use offload::target::processor::PROCESSORS;
    let text = read(&root().join("docs/targets.md"));
    let missing: Vec<&str> = PROCESSORS
        .iter()
        .map(|p| p.name)
        .filter(|name| !text.contains(&format!("| `{name}` |")))
        .collect();
    assert!(missing.is_empty(), "docs/targets.md lacks {missing:?}");
}

/// The commands of the README's "Two commands" section, their comments cut off.
fn first_commands() -> Vec<String> {
    let readme = read(&root().join("README.md"));
    let section: Vec<&str> = readme
        .lines()
        .skip_while(|l| *l != "## Two commands")
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect();
    let mut commands = Vec::new();
    let mut fenced = false;
    for line in section {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if fenced {
            let command = line.split(" # ").next().unwrap_or(line).trim();
            commands.push(command.to_string());
        }
    }
    commands
}

#[test]
fn the_readme_s_first_command_succeeds_and_its_test_run_is_what_ci_runs() {
    let commands = first_commands();
    assert!(commands.len() >= 2, "{commands:?}");
    let args = commands[0]
        .strip_prefix("cargo run --release -- ")
        .unwrap_or_else(|| panic!("the first command runs the binary: {}", commands[0]));
    let (code, out, err) = text_output(offload().current_dir(root()).args(args.split_whitespace()));
    assert_eq!(code, 0, "{args}: {err}");
    assert!(!out.is_empty(), "{args} printed nothing");
    let ci = read(&root().join(".ci/run"));
    let runs = |command: &str| {
        ci.lines().any(|l| {
            let l = l.trim();
            l == command
                || l.starts_with(&format!("{command} 2>&1 | tee "))
                || l.ends_with(&format!("$({command})"))
        })
    };
    let tests: Vec<&String> = commands
        .iter()
        .filter(|c| c.starts_with("cargo test"))
        .collect();
    assert!(!tests.is_empty(), "the README runs no tests: {commands:?}");
    for command in tests {
        assert!(
            runs(command),
            ".ci/run does not run the README's `{command}`"
        );
    }
    // The script that installs the references, beside the test command, is the one CI runs.
    let references = "eval \"$(.ci/references)\"";
    assert!(
        commands.iter().any(|c| c == references),
        "the README does not show `{references}` beside `cargo test`: {commands:?}"
    );
    assert!(
        runs(".ci/references"),
        ".ci/run does not call .ci/references"
    );
}

/// The file of module `path` (`["format", "kpack"]`) under `src/`: `a/b.rs` or `a/b/mod.rs`.
fn module_file(path: &[String]) -> PathBuf {
    let src = root().join("src");
    if path.is_empty() {
        return src.join("lib.rs");
    }
    let joined: PathBuf = path.iter().collect();
    let flat = src.join(&joined).with_extension("rs");
    if flat.is_file() {
        flat
    } else {
        src.join(joined).join("mod.rs")
    }
}

/// The public submodules a module's source declares: its `pub mod name;` lines, less those
/// under `#[doc(hidden)]` or `#[cfg(test)]` (the internal layers, `pub` only under the feature
/// `internals`, are hidden).
fn public_submodules(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut hidden = false;
    for line in source.lines().map(str::trim) {
        if line.starts_with("#[") {
            hidden |= line.contains("doc(hidden)") || line.contains("cfg(test)");
            continue;
        }
        if line.starts_with("///") || line.is_empty() {
            continue;
        }
        if let Some(name) = line
            .strip_prefix("pub mod ")
            .and_then(|rest| rest.strip_suffix(';'))
        {
            if !hidden {
                names.push(name.trim().to_string());
            }
        }
        hidden = false;
    }
    names
}

/// Every module of the public API, as paths from the crate root, the root first.
fn public_modules() -> Vec<Vec<String>> {
    let mut found = vec![Vec::new()];
    let mut next = 0;
    while let Some(module) = found.get(next).cloned() {
        next += 1;
        for name in public_submodules(&read(&module_file(&module))) {
            let mut child = module.clone();
            child.push(name);
            found.push(child);
        }
    }
    found
}

/// Whether a module's `//!` documentation holds a fenced code block.
fn has_example(source: &str) -> bool {
    source
        .lines()
        .map(str::trim_start)
        .filter_map(|line| line.strip_prefix("//!"))
        .any(|doc| doc.trim_start().starts_with("```"))
}

#[test]
fn every_public_module_has_an_example() {
    let modules = public_modules();
    let names: Vec<String> = modules.iter().map(|m| m.join("::")).collect();
    // The walk must reach the API's four layers and their modules, and never the internal ones.
    for expected in [
        "ops::rewrite::job",
        "format::kpack::record",
        "target::triple",
        "loads::hip",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not found in {names:?}"
        );
    }
    for internal in ["host", "io", "llvm", "cli", "ops::support"] {
        assert!(
            !names.iter().any(|n| n == internal),
            "{internal} found in {names:?}"
        );
    }
    let missing: Vec<String> = modules
        .iter()
        .filter(|module| !has_example(&read(&module_file(module))))
        .map(|module| format!("offload::{}", module.join("::")))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} public modules have no example in their `//!` docs: {}",
        missing.len(),
        modules.len(),
        missing.join(", ")
    );
}
