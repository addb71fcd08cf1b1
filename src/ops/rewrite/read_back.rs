//! The read-back of a rewritten file before it replaces anything: the images the rewrite meant
//! to keep, all readable, and every compressed stream sound, in one pass over the written
//! bytes where the file is neither a package nor a `.kpack` archive.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::image_target::Producer;
use crate::host::scan::Reading;
use crate::io::{Input, Output};
use crate::ops::rewrite::Summary;
use crate::ops::verify::{verify_input_except, verify_input_visiting};

/// Reads the written file back before it replaces anything: it must hold exactly the device
/// images the rewrite meant to keep, all of them readable, and every compressed bundle and
/// compressed CUDA payload must inflate to what its header says (checked in parallel, within
/// the inflation budget, never holding a whole stream), unless it is one this rewrite
/// compressed or copied as stored, which must then be those bytes (their hash).
///
/// `copied` are the stretches of the written file (offset, length; in order, apart) that
/// were copied from the input as they were, by the kernel, and checked whole as they were
/// (every byte asked for was copied). A compressed CUDA payload that lies within one is the
/// input's own by where it is, so its bytes are not read again: what the read-back still
/// checks of it is what it checks of every image, its entry's header read where the new
/// fat binary's headers place it, its size within the file, and its count.
pub(crate) fn verify(
    input: &Path,
    out: &mut Output,
    summary: &Summary,
    max_decompressed: u64,
    copied: &[(u64, u64)],
) -> Result<()> {
    let Some(written) = out.written_so_far()? else {
        return Ok(());
    };
    let data = Input::open(&written)?;
    // A compressed bundle compressed by this rewrite is sound by how it was made, and a CUDA
    // entry's compressed payload copied as it was stored is the input's own: that these are
    // their bytes is all there is to check.
    let made = |bytes: &[u8]| summary.made.contains(&xxhash_rust::xxh3::xxh3_64(bytes));
    let base = data.as_ptr() as usize;
    let in_copied = |bytes: &[u8]| {
        let Some(at) = (bytes.as_ptr() as usize).checked_sub(base) else {
            return false;
        };
        let (at, end) = (at as u64, (at + bytes.len()) as u64);
        // The last stretch that starts at or before the bytes.
        let k = copied.partition_point(|&(start, _)| start <= at);
        end <= data.len() as u64
            && k.checked_sub(1)
                .and_then(|k| copied.get(k))
                .is_some_and(|&(start, len)| end <= start + len)
    };
    let devices = std::cell::Cell::new(0usize);
    let count = &mut |image: &crate::host::scan::DeviceImage<'_>| {
        devices.set(devices.get() + usize::from(image.target.producer != Producer::Host));
    };
    let (problems, checked) = if crate::host::package::kind(&data).is_none()
        && !data.starts_with(&crate::format::kpack::MAGIC)
    {
        // Neither a package nor an archive of code objects: the one pass that finds the
        // streams to check counts the images too.
        let mut checked =
            verify_input_visiting(input, &data, max_decompressed, &made, &in_copied, count)?;
        (std::mem::take(&mut checked.problems), Some(checked))
    } else {
        // A package's `.kpack` archives count their code objects, as the summary does.
        let archives = |member: &crate::host::package::PackageMember, bytes: &[u8]| {
            let listed = crate::ops::ls::list_archive(&member.name, bytes)?;
            devices.set(devices.get() + listed.len());
            Ok(())
        };
        let problems = crate::host::scan::scan_with_archives(
            input,
            &data,
            u64::MAX,
            Reading::Headers,
            count,
            &archives,
        )?;
        (problems, None)
    };
    let devices = devices.get();
    let failed = |why: String| {
        Error::file(
            input,
            format!(
                "the rewritten file does not read back as it should ({why}); nothing was changed"
            ),
        )
    };
    if let Some(problem) = problems.first() {
        return Err(failed(problem.to_string()));
    }
    if devices != summary.images_after {
        return Err(failed(format!(
            "{devices} device images instead of {}",
            summary.images_after
        )));
    }
    let checked = match checked {
        Some(checked) => checked,
        None => verify_input_except(input, &data, max_decompressed, &made)?,
    };
    let bad = (checked.bad.iter())
        .chain(&checked.binaries_bad)
        .chain(&checked.cuda_bad);
    match bad.chain(&checked.problems).next() {
        Some(bad) => Err(failed(bad.to_string())),
        None => Ok(()),
    }
}
