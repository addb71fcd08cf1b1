//! Unbundling one bundle (binary, text, compressed, or a host object's sections) into one
//! output per target, matching entries to targets as clang-offload-bundler 19 does.

use crate::error::{Error, Result};
use crate::host::objcopy;
use crate::io::slice::offset_within;
use crate::io::{Closed, Input, Output};
use crate::llvm::adt::string_map::StringMap;
use crate::ops::bundler::entries::{decompress_input, entries_of, Contents, ReadEntry};
use crate::ops::bundler::{archive, report};
use crate::ops::bundler::{BundleKind, BundlerConfig, CheckedTargets, Mode};
use crate::target::entry_id::{self, EntryId};
use crate::target::processor::LlvmVersion;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

/// Unbundles the one input into one output per target: each entry, visited in LLVM 19's order,
/// goes to the first remaining target (in hash-map order of the standardised names) it is
/// compatible with. Outputs appear only if the whole operation succeeds.
#[tracing::instrument(skip_all, fields(files = ?config.inputs, targets = ?config.targets))]
pub fn unbundle(config: &BundlerConfig, log: &mut dyn Write) -> Result<()> {
    let targets = config.check(Mode::Unbundle)?;
    if config.file_type == "a" {
        return archive::unbundle_archive(config, &targets.names, log);
    }
    let path = &config.inputs[0];
    let input = Input::open(path)?;
    let contents = decompress_input(path, &input, config, log)?;
    let entries = entries_of(path, &contents, config)?;
    let matches = match_entries(config, &targets, &contents, &entries)?;
    matches.check(config, &targets)?;
    let mut outputs: Vec<Closed> = Vec::with_capacity(config.outputs.len());
    for (index, out_path) in config.outputs.iter().enumerate() {
        let mut output = Output::create(out_path)?;
        if matches.nothing_matched(&targets) {
            // No entry matched any target: the input passes through as the host's code.
            if targets.parsed[index].is_host() {
                for (_, data) in contents.buffers() {
                    output.write_part(&input, data)?;
                }
            }
        } else {
            match matches.by_target[index] {
                Some(Match::Entry(data)) => output.write_part(&input, data)?,
                Some(Match::HostObject(object)) => {
                    write_host_object(config, &input, object, &mut output, log)?
                }
                None => {}
            }
        }
        outputs.push(output.close()?);
    }
    Ok(crate::io::place_all(outputs)?)
}

/// What an unbundled target receives.
#[derive(Clone, Copy)]
enum Match<'a> {
    /// An entry's bytes.
    Entry(&'a [u8]),
    /// The host object that holds the bundle, to be written without its bundle sections.
    HostObject(&'a [u8]),
}

/// The entries matched to the targets.
struct Matches<'a> {
    /// What each target receives, in `-targets` order.
    by_target: Vec<Option<Match<'a>>>,
    /// The standardised names of the targets no entry went to, sorted.
    unmatched: Vec<String>,
    /// Whether a host entry went to some target.
    found_host: bool,
}

/// Gives each entry, in order, to the first remaining target it is compatible with.
fn match_entries<'a>(
    config: &BundlerConfig,
    targets: &CheckedTargets,
    contents: &'a Contents<'_>,
    entries: &[ReadEntry<'a>],
) -> Result<Matches<'a>> {
    let is_object_input = contents
        .buffers()
        .iter()
        .any(|(_, data)| BundleKind::of(&config.file_type, data).ok() == Some(BundleKind::Object));
    // LLVM compares entries with the standardised target names, parsed again: a host target
    // `host-x86_64-unknown-linux-gnu` is looked for as `host-x86_64-unknown-linux-gnu-`.
    let wanted: Vec<EntryId> = targets
        .names
        .iter()
        .map(|n| EntryId::parse_as(config.llvm, n))
        .collect();
    let mut worklist: StringMap<usize> = StringMap::with_probing(config.probing());
    for (index, name) in targets.names.iter().enumerate() {
        worklist.insert(name.as_bytes(), index);
    }
    let mut by_target: Vec<Option<Match>> = vec![None; targets.names.len()];
    let mut found_host = false;
    for entry in entries {
        if worklist.is_empty() {
            break;
        }
        if config.llvm >= LlvmVersion::V22 && !entry_id::is_well_formed(entry.id) {
            return Err(Error::msg("invalid bundle id read from the bundle"));
        }
        let code = EntryId::parse_as(config.llvm, entry.id);
        let chosen = worklist.iter().find_map(|(name, index)| {
            code.is_compatible_with(&wanted[*index], config.kind_matching())
                .then(|| (name.to_vec(), *index))
        });
        let Some((name, index)) = chosen else {
            continue;
        };
        // In an object, an entry of one zero byte stands for the object itself (LLVM treats
        // any such entry so, host or not).
        let object = (entry.data == [0] && is_object_input)
            .then(|| {
                contents
                    .buffers()
                    .into_iter()
                    .map(|(_, data)| data)
                    .find(|data| offset_within(data, entry.data).is_some())
            })
            .flatten();
        by_target[index] = Some(match object {
            Some(object) => Match::HostObject(object),
            None => Match::Entry(entry.data),
        });
        worklist.remove(&name);
        found_host |= code.is_host();
    }
    let unmatched: BTreeSet<&[u8]> = worklist.iter().map(|(k, _)| k).collect();
    Ok(Matches {
        by_target,
        unmatched: unmatched
            .into_iter()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect(),
        found_host,
    })
}

impl Matches<'_> {
    /// LLVM's errors for targets left without an entry, unless missing bundles are allowed.
    fn check(&self, config: &BundlerConfig, targets: &CheckedTargets) -> Result<()> {
        if config.allow_missing_bundles {
            return Ok(());
        }
        if !self.unmatched.is_empty() {
            return Err(Error::msg(format!(
                "Can't find bundles for{}",
                join_llvm_list(&self.unmatched)
            )));
        }
        if !self.nothing_matched(targets) && !self.found_host && targets.host_index.is_some() {
            return Err(Error::msg("Can't find bundle for the host target"));
        }
        Ok(())
    }

    /// Whether no entry matched any target.
    fn nothing_matched(&self, targets: &CheckedTargets) -> bool {
        self.unmatched.len() == targets.names.len()
    }
}

/// Writes the host object `object` (a buffer of `input`, or decompressed from it) without its
/// bundle sections; for `-###`, prints the command instead.
fn write_host_object(
    config: &BundlerConfig,
    input: &Input,
    object: &[u8],
    output: &mut Output,
    log: &mut dyn Write,
) -> Result<()> {
    let path: &Path = &config.inputs[0];
    if config.dry_run {
        report::remove_sections_command(log, path);
        return Ok(());
    }
    let prefix = crate::host::BUNDLE_SECTION_PREFIX.as_bytes();
    let host = objcopy::remove_sections(object, &|name| name.starts_with(prefix))
        .map_err(|e| Error::container(path, e))?;
    host.write_to(output, &[input])
}

/// Formats names as LLVM's "Can't find bundles for" message does: ` A`, ` A and B`,
/// ` A, B, and C`.
fn join_llvm_list(names: &[String]) -> String {
    let mut out = String::new();
    let last = names.len().saturating_sub(1);
    for (i, name) in names.iter().enumerate() {
        if i > 0 && names.len() > 2 {
            out.push(',');
        }
        out.push(' ');
        if i > 0 && i == last {
            out.push_str("and ");
        }
        out.push_str(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_lists_read_as_llvm_writes_them() {
        let n = |v: &[&str]| join_llvm_list(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(n(&["a"]), " a");
        assert_eq!(n(&["a", "b"]), " a and b");
        assert_eq!(n(&["a", "b", "c"]), " a, b, and c");
    }
}
