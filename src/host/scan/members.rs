//! The members of packages (wheels, Debian and conda packages, tarballs: see
//! [`crate::host::package`]) in a scan: each member that may hold device code is scanned as a
//! file of its own, named `PACKAGE!member`, its images reported to the scan's visitor, its
//! numbers (units, containers inflated, members) following the file's.

use std::path::Path;

use crate::error::{Error, Result};
use crate::host::package::{self, PackageMember};
use crate::host::scan::{run_at, Counts, DeviceImage, Options, Place, Places, Reading, Scan};

/// What is handed each package member that is a `.kpack` archive (its place and bytes): the
/// archive holds code objects by a table of its own, which the scan does not read.
pub type ArchiveVisit<'a> = dyn Fn(&PackageMember, &[u8]) -> Result<()> + 'a;

/// [`super::scan_reading`], handing the package members that are `.kpack` archives to
/// `archives` instead of scanning them; what it returns for one is damage, reported as the
/// scan's other problems are.
pub fn scan_with_archives(
    path: &Path,
    file: &[u8],
    limit: u64,
    reading: Reading,
    visit: &mut dyn FnMut(&DeviceImage<'_>),
    archives: &ArchiveVisit<'_>,
) -> Result<Vec<Error>> {
    let budget = package::Budget::new(limit);
    let options = Options {
        places: Places::Everywhere,
        limit,
        reading,
        depth: 0,
        package: None,
        budget: &budget,
        archives: Some(archives),
    };
    run_at(path, file, options, visit, &mut Counts::default())
}

impl Scan<'_, '_> {
    /// The members of a package that may hold device code, each scanned as a file of its
    /// own named `PACKAGE!member`. Damage of the package is reported, not fatal: the members
    /// read before it are listed.
    pub(super) fn package(
        &mut self,
        data: &[u8],
        kind: package::Kind,
        at: Place<'_>,
    ) -> Result<()> {
        let path = self.path;
        let mut found = Vec::new();
        let budget = self.package_budget;
        let read = package::read(path, data, kind, budget, &mut |member| {
            self.package_members += 1;
            let number = self.package_members;
            let place = PackageMember {
                linked: crate::host::is_linked_elf(member.bytes),
                ..PackageMember::new(path, self.package, member.name, number)
            };
            if let Some(archives) = self.archives {
                if member.bytes.starts_with(&crate::format::kpack::MAGIC) {
                    if let Err(e) = archives(&place, member.bytes) {
                        found.push(e);
                    }
                    return Ok(());
                }
            }
            let options = Options {
                places: self.places,
                limit: self.limit,
                reading: self.reading,
                depth: at.depth + 1,
                package: Some(&place),
                budget,
                archives: self.archives,
            };
            // The member's units and containers are numbered after the file's so far: the
            // numbers stay unique in the scan of the file.
            let mut counts = Counts {
                members: self.package_members,
                units: self.units,
                inflations: self.inflations,
            };
            found.extend(run(member.bytes, options, &mut *self.visit, &mut counts)?);
            self.package_members = counts.members;
            self.units = counts.units;
            self.inflations = counts.inflations;
            Ok(())
        });
        self.problems.append(&mut found);
        match read {
            Ok(mut problems) => self.problems.append(&mut problems),
            Err(e) => self.problems.push(e),
        }
        Ok(())
    }
}

/// Scans the package member `options.package` (its bytes `file`); `counts` holds the numbers
/// given out.
fn run(
    file: &[u8],
    options: Options<'_>,
    visit: &mut dyn FnMut(&DeviceImage<'_>),
    counts: &mut Counts,
) -> Result<Vec<Error>> {
    let path = options
        .package
        .map(|p| p.name.as_path())
        .unwrap_or(Path::new(""));
    run_at(path, file, options, visit, counts)
}
