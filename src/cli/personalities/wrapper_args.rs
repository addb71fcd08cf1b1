//! What the command lines of both wrappers share: the images and their per-image
//! `--offload-arch` (ROCm's clang-offload-wrapper) taken out of the arguments in order, and
//! the target ID each image gets.

use std::io::Write;
use std::path::PathBuf;

/// A wrapper command line with the images and their `--offload-arch` taken out, since each
/// `--offload-arch` names the image after it and only the order of the arguments tells which.
pub(crate) struct CommandLine {
    /// Each target ID with the index of the image it names (the number of images before it).
    pub(crate) arches: Vec<(usize, String)>,
    /// The images, in order.
    pub(crate) images: Vec<PathBuf>,
    /// The other options, with their values, for the option parser.
    pub(crate) rest: Vec<String>,
}

impl CommandLine {
    /// Reads `args` in order; the options named in `valued` take the next argument as their
    /// value when it is not joined with `=`. Everything after `--` is an image.
    pub(crate) fn split(args: &[String], valued: &[&str]) -> CommandLine {
        let mut line = CommandLine {
            arches: Vec::new(),
            images: Vec::new(),
            rest: Vec::new(),
        };
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            let body = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'));
            match body {
                Some("") if arg == "--" => line.images.extend(iter.by_ref().map(PathBuf::from)),
                // Standard input.
                Some("") => line.images.push(PathBuf::from(arg)),
                Some(b) if b.starts_with("offload-arch=") => {
                    let arch = b["offload-arch=".len()..].to_string();
                    line.arches.push((line.images.len(), arch));
                }
                Some("offload-arch") => {
                    if let Some(v) = iter.next() {
                        line.arches.push((line.images.len(), v.clone()));
                    }
                }
                Some(_) => {
                    line.rest.push(arg.clone());
                    // A value in the next argument belongs to the option.
                    if body.is_some_and(|b| valued.contains(&b)) {
                        line.rest.extend(iter.next().cloned());
                    }
                }
                None => line.images.push(PathBuf::from(arg)),
            }
        }
        line
    }
}

/// The target ID of each of `count` images, empty for an image no `--offload-arch` names, with
/// the unnamed ones at the end left out. An `--offload-arch` after the last image has none to
/// name: an error.
pub(crate) fn per_image(
    prog: &str,
    count: usize,
    arches: &[(usize, String)],
    err: &mut dyn Write,
) -> Result<Vec<String>, i32> {
    let mut per_image = vec![String::new(); count];
    for (index, arch) in arches {
        match per_image.get_mut(*index) {
            Some(slot) => *slot = arch.clone(),
            None => {
                let _ = writeln!(
                    err,
                    "{prog}: error: --offload-arch={arch} is not followed by an image"
                );
                return Err(1);
            }
        }
    }
    let named = per_image
        .iter()
        .rposition(|a| !a.is_empty())
        .map_or(0, |i| i + 1);
    per_image.truncate(named);
    Ok(per_image)
}
