//! The integration tests, in one binary: one module per area, driving the real `offload` and
//! `offload-extract` binaries, the library, and the LLVM 19 tools they are checked against.
//!
//! `cargo test --test main NAME` runs the tests whose path contains NAME, e.g. `packager::`
//! or `golden`. What the modules share is in `util`.

mod util;

mod architecture;
mod bad_input;
mod bare_check;
mod bare_images;
mod bombs;
mod bundler_22;
mod campaign;
mod check;
mod check_catalogues;
mod check_embedded;
mod check_require;
mod cli_output;
mod compress_choices;
mod compress_threads;
mod compressed;
mod cuda_both;
mod cuda_check;
mod cuda_copied;
mod cuda_entries;
mod cuda_extract;
mod cuda_ls;
mod cuda_rdc;
mod cuda_strip;
mod cuda_variants;
mod destinations;
mod differential;
mod docs;
mod du_pages;
mod embedded;
mod environments;
mod extract;
mod extract_tree;
mod failed_inputs;
mod fuzz_regressions;
mod generic;
mod golden;
mod growth;
mod hostile_costs;
mod hostile_outputs;
mod hostile_streams;
mod hostile_trees;
mod hostile_walks;
mod in_place;
mod kpack;
mod kpack_hostile;
mod kpack_merge;
mod kpack_more;
mod kpack_pe;
mod kpack_pe_split;
mod kpack_split;
mod kpack_undo;
mod kpack_use;
mod kpack_wheels;
mod linked;
mod links;
mod listed_trees;
mod llvm23;
mod llvm23_linked;
mod llvm23_tools;
mod ls;
mod mixed_cuts;
mod names_bytes;
mod objcopy_coff;
mod objcopy_elf;
mod object_bundles;
mod offload_binary;
mod offload_binary_v2;
mod offload_check;
mod output_safety;
mod packager;
mod packager_order;
mod packages;
mod packages_check;
mod packages_rewrite;
mod packages_tar;
mod packaging;
mod parallel_copy;
mod prune;
mod readme;
mod readobj;
mod rewrite;
mod rewrite_again;
mod rewrite_pe;
mod rewrite_program;
mod rewrite_real;
mod runtime_pick;
mod strip_scanned;
mod syncing;
mod system_zstd;
mod targets;
mod targets_cmd;
mod trees;
mod trees_read;
mod wrapper;
mod wrapper_bitcode;
mod wrapper_native;

/// Cargo builds only tests/main.rs (`autotests = false`), so a test file that no `mod` line
/// names would never be compiled nor run.
#[test]
fn every_test_file_is_a_module() {
    let tests = util::root().join("tests");
    let main = std::fs::read_to_string(tests.join("main.rs")).unwrap();
    let forgotten: Vec<String> = std::fs::read_dir(&tests)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".rs").map(str::to_string))
        .filter(|n| n != "main" && !main.contains(&format!("\nmod {n};\n")))
        .collect();
    assert!(
        forgotten.is_empty(),
        "tests/main.rs lacks `mod` lines for {forgotten:?}"
    );
}
