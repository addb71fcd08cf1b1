# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_offload_global_optspecs
    string join \n h/help V/version
end

function __fish_offload_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_offload_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_offload_using_subcommand
    set -l cmd (__fish_offload_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c offload -n "__fish_offload_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c offload -n "__fish_offload_needs_command" -s V -l version -d 'Print version'
complete -c offload -n "__fish_offload_needs_command" -f -a "bundler" -d 'clang-offload-bundler 19, 22 or 23, drop-in: same options, same output bytes'
complete -c offload -n "__fish_offload_needs_command" -f -a "packager" -d 'clang-offload-packager 19 or llvm-offload-binary 22 and 23, drop-in: same options, same output bytes'
complete -c offload -n "__fish_offload_needs_command" -f -a "ls" -d 'list the device images in files (--json for a machine-readable list), also split binaries\' code in .kpack archives and .kpack archives themselves'
complete -c offload -n "__fish_offload_needs_command" -f -a "extract" -d 'write the device images a GPU loads (--arch gfx1101: native, else generic code) (--device ISA: the one code object the HIP runtime loads per bundle, or the kpack loader finds in .kpack archives)'
complete -c offload -n "__fish_offload_needs_command" -f -a "check" -d 'what each GPU loads from a program and its libraries (--device, else this machine), and for split binaries which .kpack archive it finds, or every path searched'
complete -c offload -n "__fish_offload_needs_command" -f -a "verify" -d 'inflate and hash every compressed bundle of files (ls and extract inflate only what they need); ls --verify lists, then verifies; .kpack archives, and the archive sets of split binaries, checked whole'
complete -c offload -n "__fish_offload_needs_command" -f -a "du" -d 'bytes of device code per target, per file and in total, stored and inflated (--keep gfx942: what strip would remove; --json; --html: a treemap page; --kernels: each function\'s size, and code stored twice)'
complete -c offload -n "__fish_offload_needs_command" -f -a "targets" -d 'the targets every unit of device code in files carries, and those some carry (--format debian|cmake|torch, --json), and the oldest CUDA driver they need'
complete -c offload -n "__fish_offload_needs_command" -f -a "wrapper" -d 'clang-offload-wrapper: a host object (or .ll, .bc) that registers OpenMP images; with --kind=openmp|cuda|hip, llvm-offload-wrapper\'s module (.o/.obj an ELF or COFF object, .ll IR text, else bitcode); --kind=hip --bundle a.co b.co bundles code objects first, as clang does'
complete -c offload -n "__fish_offload_needs_command" -f -a "strip" -d 'keep only some targets\' device code (--keep gfx90a), in place or to a new file'
complete -c offload -n "__fish_offload_needs_command" -f -a "compress" -d 'compress the bundles of a file (--format-version 2|3), in linked programs and shared libraries too (ELF; PE executables and DLLs)'
complete -c offload -n "__fish_offload_needs_command" -f -a "decompress" -d 'the reverse of compress: every compressed bundle of a file stored plain'
complete -c offload -n "__fish_offload_needs_command" -f -a "kpack" -d 'split programs and libraries into host files and per-processor .kpack archives (-o DIR, -r for trees); --merge puts archived code back as bundles'
complete -c offload -n "__fish_offload_needs_command" -f -a "links" -d 'symbolic links to this program in a folder, under the LLVM tools\' names below (--release 19|22|23: names ending in -19, -22 or -23), so that a toolchain finds them'
complete -c offload -n "__fish_offload_needs_command" -f -a "completions" -d 'the completion script of a shell (bash, zsh, fish, elvish, powershell)'
complete -c offload -n "__fish_offload_using_subcommand bundler" -l type -d 'Type of the files to be bundled/unbundled. Current supported types are: i: cpp-output ii: c++-cpp-output cui: cuda-cpp-output hipi: hip-cpp-output d: dependency ll: llvm bc: llvm-bc s: assembler o: object a: archive of objects gch: precompiled-header ast: clang AST file' -r
complete -c offload -n "__fish_offload_using_subcommand bundler" -l targets -d '[<offload kind>-<target triple>,...]' -r
complete -c offload -n "__fish_offload_using_subcommand bundler" -l input -d 'Input file. Can be specified multiple times for multiple input files.' -r -F
complete -c offload -n "__fish_offload_using_subcommand bundler" -l inputs -d '[<input file>,...] (deprecated)' -r -F
complete -c offload -n "__fish_offload_using_subcommand bundler" -l output -d 'Output file. Can be specified multiple times for multiple output files.' -r -F
complete -c offload -n "__fish_offload_using_subcommand bundler" -l outputs -d '[<output file>,...] (deprecated)' -r -F
complete -c offload -n "__fish_offload_using_subcommand bundler" -l bundle-align -d 'Alignment of bundle for binary files' -r
complete -c offload -n "__fish_offload_using_subcommand bundler" -l compression-level -d 'Specify the compression level (integer)' -r
complete -c offload -n "__fish_offload_using_subcommand bundler" -l compressed-bundle-version -d 'Compressed bundle format to write (default DEFAULT_CCOB, or COMPRESSED_BUNDLE_FORMAT_VERSION from LLVM 22)' -r
complete -c offload -n "__fish_offload_using_subcommand bundler" -l compression-method -d 'Compression method to write (default zstd)' -r
complete -c offload -n "__fish_offload_using_subcommand bundler" -l max-decompressed-size -d 'Refuse compressed bundles larger than this when decompressed (default 16 GiB)' -r
complete -c offload -n "__fish_offload_using_subcommand bundler" -l unbundle -d 'Unbundle bundled file into several output files.'
complete -c offload -n "__fish_offload_using_subcommand bundler" -l list -d 'List bundle IDs in the bundled file.'
complete -c offload -n "__fish_offload_using_subcommand bundler" -l allow-missing-bundles -d 'Create empty files if bundles are missing when unbundling.'
complete -c offload -n "__fish_offload_using_subcommand bundler" -l check-input-archive -d 'Check if input heterogeneous archive is valid in terms of TargetID rules.'
complete -c offload -n "__fish_offload_using_subcommand bundler" -l hip-openmp-compatible -d 'Treat hip and hipv4 offload kinds as compatible with openmp kind, and vice versa.'
complete -c offload -n "__fish_offload_using_subcommand bundler" -l compress -d 'Compress output file when bundling.'
complete -c offload -n "__fish_offload_using_subcommand bundler" -l verbose -d 'Print debug information.'
complete -c offload -n "__fish_offload_using_subcommand bundler" -l ### -d 'Print any external commands that are to be executed instead of actually executing them - for testing purposes.'
complete -c offload -n "__fish_offload_using_subcommand bundler" -l help -d 'Display available options (--help-hidden for more)'
complete -c offload -n "__fish_offload_using_subcommand bundler" -s h -d ''
complete -c offload -n "__fish_offload_using_subcommand bundler" -l help-hidden -d ''
complete -c offload -n "__fish_offload_using_subcommand bundler" -l help-list -d 'Display list of available options (--help-list-hidden for more)'
complete -c offload -n "__fish_offload_using_subcommand bundler" -l help-list-hidden -d ''
complete -c offload -n "__fish_offload_using_subcommand bundler" -l version -d 'Display the version of this program'
complete -c offload -n "__fish_offload_using_subcommand packager" -s o -d 'Write output to <file>.' -r -F
complete -c offload -n "__fish_offload_using_subcommand packager" -l image -d 'List of key and value arguments. Required keywords are \'file\' and \'triple\'.' -r
complete -c offload -n "__fish_offload_using_subcommand packager" -l archive -d 'Write extracted files to a static archive'
complete -c offload -n "__fish_offload_using_subcommand packager" -l help -d 'Display available options (--help-hidden for more)'
complete -c offload -n "__fish_offload_using_subcommand packager" -s h -d ''
complete -c offload -n "__fish_offload_using_subcommand packager" -l help-hidden -d ''
complete -c offload -n "__fish_offload_using_subcommand packager" -l help-list -d 'Display list of available options (--help-list-hidden for more)'
complete -c offload -n "__fish_offload_using_subcommand packager" -l help-list-hidden -d ''
complete -c offload -n "__fish_offload_using_subcommand packager" -l version -d 'Display the version of this program'
complete -c offload -n "__fish_offload_using_subcommand ls" -l uri -d 'Print addresses instead of the table. `--uri` (or `--uri=absolute`): one `file://ABSOLUTE-PATH#offset=N&size=N` per image stored uncompressed, a byte range of the file; for an image inside a compressed bundle, `file://ABSOLUTE-PATH#offset=N&size=N&entry=ID`, the compressed bundle\'s byte range and the entry\'s ID in the bundle it inflates to. Path and ID are percent-encoded as the code object URI syntax asks: every byte outside `[a-zA-Z0-9/_.~-]` as `%XX`. `--uri=readobj`: the lines `llvm-readobj --offloading` (LLVM 22) prints, `ENTRY-ID<TAB>file://PATH#offset=N&size=N`, for the same bundle entries it finds, the path as given; after a compressed bundle LLVM gives offsets in the decompressed bundle, and so does this' -r -f -a "absolute\t'Absolute paths, and only byte ranges of the file'
readobj\t'`llvm-readobj --offloading`\'s lines, byte for byte'"
complete -c offload -n "__fish_offload_using_subcommand ls" -s j -l jobs -d 'Files worked on at once (default: the number of cores). Output comes in the order of the files, whatever the number' -r
complete -c offload -n "__fish_offload_using_subcommand ls" -l max-decompressed-size -d 'Refuse a compressed bundle that declares, or inflates to, more than this many bytes (every command that reads one: listing, extracting, rewriting, verifying, checking)' -r
complete -c offload -n "__fish_offload_using_subcommand ls" -l json -d 'Print a JSON array with one object per image, in file order'
complete -c offload -n "__fish_offload_using_subcommand ls" -l verify -d 'After the listing, inflate and hash every compressed bundle as `offload verify` does (a listing inflates each only up to its bundle\'s header): each damaged one is an error naming the file, the section and the offset, and the exit status is 1'
complete -c offload -n "__fish_offload_using_subcommand ls" -s r -l recursive -d 'Walk the folders named to their last level (without it, a folder gives its own files). Files found in folders are taken when their first bytes say they may hold device code'
complete -c offload -n "__fish_offload_using_subcommand ls" -l follow -d 'Follow symbolic links found in folders (a link back into a folder being walked is a loop: reported and skipped). Without it they are skipped'
complete -c offload -n "__fish_offload_using_subcommand ls" -s v -l verbose -d 'Log what is done on standard error: -v what was found, chosen and written, -vv the details, -vvv everything. OFFLOAD_LOG, when set, decides instead'
complete -c offload -n "__fish_offload_using_subcommand ls" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c offload -n "__fish_offload_using_subcommand extract" -s j -l jobs -d 'Files worked on at once (default: the number of cores). Output comes in the order of the files, whatever the number' -r
complete -c offload -n "__fish_offload_using_subcommand extract" -l arch -d 'Target ID of the device (`gfx90a`, `gfx90a:xnack+`, or the runtime\'s `amdgcn-amd-amdhsa--gfx90a:xnack+`): every image it can load; repeat for several. A CUDA compute capability (`sm_86`) takes every cubin it runs and the PTX it may compile; `compute_86` that PTX alone' -r
complete -c offload -n "__fish_offload_using_subcommand extract" -l device -d 'A GPU as the HIP runtime names it (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`, or `gfx90a:sramecc+:xnack-`): from each bundle, the code object the runtime loads for it. Repeat for each GPU of one machine, in the runtime\'s order. A CUDA device (`sm_89`): from each CUDA fat binary, the entry the driver loads' -r
complete -c offload -n "__fish_offload_using_subcommand extract" -s o -l output -d 'Where to write: a folder (made if missing), or, for archives, a `.a` file to write one device archive' -r -F
complete -c offload -n "__fish_offload_using_subcommand extract" -l triple -d 'Only images for this target triple' -r
complete -c offload -n "__fish_offload_using_subcommand extract" -l kind -d 'Only images of this offload kind (`hip`, `openmp`, `cuda`)' -r
complete -c offload -n "__fish_offload_using_subcommand extract" -l max-decompressed-size -d 'Refuse a compressed bundle that declares, or inflates to, more than this many bytes (every command that reads one: listing, extracting, rewriting, verifying, checking)' -r
complete -c offload -n "__fish_offload_using_subcommand extract" -s r -l recursive -d 'Walk the folders named to their last level (without it, a folder gives its own files). Files found in folders are taken when their first bytes say they may hold device code'
complete -c offload -n "__fish_offload_using_subcommand extract" -l follow -d 'Follow symbolic links found in folders (a link back into a folder being walked is a loop: reported and skipped). Without it they are skipped'
complete -c offload -n "__fish_offload_using_subcommand extract" -l exact -d 'Match target IDs exactly, instead of by what the device loads (per translation unit: its native code, else a covering generic target\'s, else SPIR-V)'
complete -c offload -n "__fish_offload_using_subcommand extract" -s q -l quiet -d 'Print nothing but errors'
complete -c offload -n "__fish_offload_using_subcommand extract" -s v -l verbose -d 'Log what is done on standard error: -v what was found, chosen and written, -vv the details, -vvv everything. OFFLOAD_LOG, when set, decides instead'
complete -c offload -n "__fish_offload_using_subcommand extract" -l sync -d 'Sync every file written, and every folder one is put in, before the command ends, as OFFLOAD_SYNC=1 does for every command (otherwise only a file that replaces one is synced, with its folder)'
complete -c offload -n "__fish_offload_using_subcommand extract" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c offload -n "__fish_offload_using_subcommand check" -l device -d 'A device, in the runtime\'s order: a target ID (`gfx90a:sramecc+:xnack-`) or the runtime\'s full ISA name (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`), or a CUDA compute capability (`sm_89`: checked against CUDA fat binaries). Repeat for several; AMD and CUDA devices may be named together, each checked by its runtime. Without it, the GPUs the kernel driver lists (KFD topology; the folder `OFFLOAD_KFD_TOPOLOGY` names, if set)' -r
complete -c offload -n "__fish_offload_using_subcommand check" -l require -d 'A release gate: every file with device code must carry code for each of these targets, else exit 1 naming the file. Our target IDs (gfx90a, sm_90), TORCH_CUDA_ARCH_LIST ("8.0;9.0+PTX": +PTX asks for PTX too), PYTORCH_ROCM_ARCH, CMAKE_CUDA_ARCHITECTURES ("80-real;90-virtual": 80 asks for code and PTX, -real code alone, -virtual PTX alone) and CMAKE_HIP_ARCHITECTURES ("gfx90a;gfx942"); repeatable. Prints a table of files against targets instead of the report; each target is checked as the one GPU of a machine' -r
complete -c offload -n "__fish_offload_using_subcommand check" -l format -d 'With --require: `text` (the default), `json` (as --json), or `github` (annotations a GitHub Actions log shows as errors on the files)' -r
complete -c offload -n "__fish_offload_using_subcommand check" -l driver -d 'The CUDA release of the machine\'s driver (`12.4`): PTX of a newer PTX ISA and entries compressed in a way it cannot inflate (zstd before 12.4) are noted per file and count as code a device is without (exit 1)' -r
complete -c offload -n "__fish_offload_using_subcommand check" -s j -l jobs -d 'Files worked on at once (default: the number of cores). Output comes in the order of the files, whatever the number' -r
complete -c offload -n "__fish_offload_using_subcommand check" -l max-decompressed-size -d 'Refuse a compressed bundle that declares, or inflates to, more than this many bytes (every command that reads one: listing, extracting, rewriting, verifying, checking)' -r
complete -c offload -n "__fish_offload_using_subcommand check" -l json -d 'Print one JSON object: the devices, every file with its bundles, the libraries not found (with --require, and the gate\'s verdicts under "required")'
complete -c offload -n "__fish_offload_using_subcommand check" -l require-embedded -d 'Let device images embedded as data (which the program loads itself, such as cubins for `cuModuleLoadData` in a library\'s read-only data) decide the exit status too: by default they are reported apart, and a device without code in them fails nothing'
complete -c offload -n "__fish_offload_using_subcommand check" -s r -l recursive -d 'Walk the folders named to their last level (without it, a folder gives its own files). Files found in folders are taken when their first bytes say they may hold device code'
complete -c offload -n "__fish_offload_using_subcommand check" -l follow -d 'Follow symbolic links found in folders (a link back into a folder being walked is a loop: reported and skipped). Without it they are skipped'
complete -c offload -n "__fish_offload_using_subcommand check" -s v -l verbose -d 'Log what is done on standard error: -v what was found, chosen and written, -vv the details, -vvv everything. OFFLOAD_LOG, when set, decides instead'
complete -c offload -n "__fish_offload_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c offload -n "__fish_offload_using_subcommand verify" -s j -l jobs -d 'Files worked on at once (default: the number of cores). Output comes in the order of the files, whatever the number' -r
complete -c offload -n "__fish_offload_using_subcommand verify" -l max-decompressed-size -d 'Refuse a compressed bundle that declares, or inflates to, more than this many bytes (every command that reads one: listing, extracting, rewriting, verifying, checking)' -r
complete -c offload -n "__fish_offload_using_subcommand verify" -s r -l recursive -d 'Walk the folders named to their last level (without it, a folder gives its own files). Files found in folders are taken when their first bytes say they may hold device code'
complete -c offload -n "__fish_offload_using_subcommand verify" -l follow -d 'Follow symbolic links found in folders (a link back into a folder being walked is a loop: reported and skipped). Without it they are skipped'
complete -c offload -n "__fish_offload_using_subcommand verify" -s v -l verbose -d 'Log what is done on standard error: -v what was found, chosen and written, -vv the details, -vvv everything. OFFLOAD_LOG, when set, decides instead'
complete -c offload -n "__fish_offload_using_subcommand verify" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c offload -n "__fish_offload_using_subcommand du" -s j -l jobs -d 'Files worked on at once (default: the number of cores). Output comes in the order of the files, whatever the number' -r
complete -c offload -n "__fish_offload_using_subcommand du" -l keep -d 'Count what stripping to these devices would remove (the rule of `strip --keep`); repeat for several' -r
complete -c offload -n "__fish_offload_using_subcommand du" -l html -d 'Write a treemap of the bytes (by file, section and target, hatched what --keep would remove) to PATH as one self-contained HTML page; `-` writes it to standard output instead of the report' -r -F
complete -c offload -n "__fish_offload_using_subcommand du" -l top -d 'With --kernels: list only the N functions with the most bytes' -r
complete -c offload -n "__fish_offload_using_subcommand du" -l max-decompressed-size -d 'Refuse a compressed bundle that declares, or inflates to, more than this many bytes (every command that reads one: listing, extracting, rewriting, verifying, checking)' -r
complete -c offload -n "__fish_offload_using_subcommand du" -s r -l recursive -d 'Walk the folders named to their last level (without it, a folder gives its own files). Files found in folders are taken when their first bytes say they may hold device code'
complete -c offload -n "__fish_offload_using_subcommand du" -l follow -d 'Follow symbolic links found in folders (a link back into a folder being walked is a loop: reported and skipped). Without it they are skipped'
complete -c offload -n "__fish_offload_using_subcommand du" -l json -d 'Print one JSON object: `files` (each with its `targets`) and `total`'
complete -c offload -n "__fish_offload_using_subcommand du" -l kernels -d 'List each function\'s code size per target instead (kernels and device functions, from the symbol tables), the largest first, and the code objects and functions stored more than once with the bytes keeping one copy would save'
complete -c offload -n "__fish_offload_using_subcommand du" -s v -l verbose -d 'Log what is done on standard error: -v what was found, chosen and written, -vv the details, -vvv everything. OFFLOAD_LOG, when set, decides instead'
complete -c offload -n "__fish_offload_using_subcommand du" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c offload -n "__fish_offload_using_subcommand targets" -l format -d 'The output: `text` (the default: `every:` and `some:` lines, then `driver:`), `debian` (the processors a device loads code from in every AMD unit, space separated, for Debian\'s `X-ROCm-Built-For:` field), `cmake` (`CMAKE_HIP_ARCHITECTURES=\'gfx90a;gfx1100\'`, `CMAKE_CUDA_ARCHITECTURES=\'80-real;90\'`), `torch` (`PYTORCH_ROCM_ARCH=\'gfx90a\'`, `TORCH_CUDA_ARCH_LIST=\'8.0;9.0+PTX\'`). The lists hold the targets every unit has' -r -f -a "text\t'`every:`, `some:` and `driver:` lines'
debian\t'One line of processors, for Debian\'s `X-ROCm-Built-For:`'
cmake\t'CMake\'s architecture lists'
torch\t'PyTorch\'s architecture lists'"
complete -c offload -n "__fish_offload_using_subcommand targets" -s j -l jobs -d 'Files worked on at once (default: the number of cores). Output comes in the order of the files, whatever the number' -r
complete -c offload -n "__fish_offload_using_subcommand targets" -l max-decompressed-size -d 'Refuse a compressed bundle that declares, or inflates to, more than this many bytes (every command that reads one: listing, extracting, rewriting, verifying, checking)' -r
complete -c offload -n "__fish_offload_using_subcommand targets" -l json -d 'Print one JSON object: `every`, `some`, `processors`, `driver`, and `files` (each with its own `every`, `some`, `units` and `driver_needs`)'
complete -c offload -n "__fish_offload_using_subcommand targets" -s r -l recursive -d 'Walk the folders named to their last level (without it, a folder gives its own files). Files found in folders are taken when their first bytes say they may hold device code'
complete -c offload -n "__fish_offload_using_subcommand targets" -l follow -d 'Follow symbolic links found in folders (a link back into a folder being walked is a loop: reported and skipped). Without it they are skipped'
complete -c offload -n "__fish_offload_using_subcommand targets" -s v -l verbose -d 'Log what is done on standard error: -v what was found, chosen and written, -vv the details, -vvv everything. OFFLOAD_LOG, when set, decides instead'
complete -c offload -n "__fish_offload_using_subcommand targets" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c offload -n "__fish_offload_using_subcommand wrapper" -s o -d 'Output filename: .o/.obj a native object, .ll LLVM IR, .bc bitcode' -r -F
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l target -d 'Target triple for the output module (native objects: x86_64 and aarch64 ELF, x86_64-pc-windows-msvc COFF)' -r
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l offload-arch -d 'Target ID of the image that follows' -r
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l kind -d 'Wrap for offload kind: =openmp: Wrap OpenMP binaries =cuda: Wrap CUDA binaries =hip: Wrap HIP binaries =sycl: Wrap SYCL binaries' -r
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l triple -d 'Target triple for the wrapper module' -r
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l filetype -d 'Write that, whatever the output\'s name (under the name llvm-offload-wrapper, the only way to a native object)' -r
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l compression-level -d 'zstd level of --compress (default 3)' -r
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l help -d 'Display available options'
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l version -d 'Display the version of this program'
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l bundle -d 'Bundle the images, AMDGPU code objects, into one HIP fat binary'
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l compress -d 'Compress the bundle (CCOB version 3, zstd)'
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l help-list -d 'Display list of available options (--help-list-hidden for more)'
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l relocatable -d 'Wrap for a relocatable offloading application (OpenMP only)'
complete -c offload -n "__fish_offload_using_subcommand wrapper" -s v -l verbose -d 'Log what is done on standard error: -v what was found, chosen and written, -vv the details, -vvv everything. OFFLOAD_LOG, when set, decides instead'
complete -c offload -n "__fish_offload_using_subcommand wrapper" -l sync -d 'Sync every file written, and every folder one is put in, before the command ends, as OFFLOAD_SYNC=1 does for every command (otherwise only a file that replaces one is synced, with its folder)'
complete -c offload -n "__fish_offload_using_subcommand strip" -s j -l jobs -d 'Files worked on at once (default: the number of cores). Output comes in the order of the files, whatever the number' -r
complete -c offload -n "__fish_offload_using_subcommand strip" -l keep -d 'Keep the images a device with this target ID loads (host code always stays). A CUDA compute capability (`sm_80`) keeps the cubins it runs and the PTX it may compile' -r
complete -c offload -n "__fish_offload_using_subcommand strip" -l remove -d 'Remove the images a device with this target ID loads. For CUDA, `sm_XY` removes the cubins for that SM (and its `a` and `f` variants), `compute_XY` that PTX' -r
complete -c offload -n "__fish_offload_using_subcommand strip" -l ptx -d 'CUDA PTX: `keep` every PTX entry, `drop` every one, or treat it as any image (`asked`: kept when a device kept may compile it, removed when its `compute_XY` is named)' -r -f -a "asked\t'As any image'
keep\t'Keep every PTX entry'
drop\t'Drop every PTX entry'"
complete -c offload -n "__fish_offload_using_subcommand strip" -s o -l output -d 'Write the result to this file (needed unless --in-place or --dry-run); for several inputs or a folder, to this folder (made if missing), which mirrors their tree; with --variant, the folder each package made goes into' -r -F
complete -c offload -n "__fish_offload_using_subcommand strip" -l max-decompressed-size -d 'Refuse a compressed bundle that declares, or inflates to, more than this many bytes (every command that reads one: listing, extracting, rewriting, verifying, checking)' -r
complete -c offload -n "__fish_offload_using_subcommand strip" -s r -l recursive -d 'Walk the folders named to their last level (without it, a folder gives its own files). Files found in folders are taken when their first bytes say they may hold device code'
complete -c offload -n "__fish_offload_using_subcommand strip" -l follow -d 'Follow symbolic links found in folders (a link back into a folder being walked is a loop: reported and skipped). Without it they are skipped'
complete -c offload -n "__fish_offload_using_subcommand strip" -l in-place -d 'Replace each file (written beside it, synced, renamed over it; a file is untouched on any error of its own, and a file with several links is rewritten once)'
complete -c offload -n "__fish_offload_using_subcommand strip" -l dry-run -d 'Say what would change, and change nothing'
complete -c offload -n "__fish_offload_using_subcommand strip" -l prune -d 'Remove the files that are bare device images (code objects as a runtime loads them, in no container) only for other targets: in place they are deleted, with -o not copied. Without it they are left (copied) as they are and the summary names them. With -o, the files without device code are copied too, so that the output folder is the tree less what was pruned'
complete -c offload -n "__fish_offload_using_subcommand strip" -l prune-named -d 'With --prune, remove too the files without device code whose names carry processors (`TensileLibrary_lazy_gfx1100.dat`), none of which a device kept loads code for. The summary names them without it'
complete -c offload -n "__fish_offload_using_subcommand strip" -s v -l verbose -d 'Log what is done on standard error: -v what was found, chosen and written, -vv the details, -vvv everything. OFFLOAD_LOG, when set, decides instead'
complete -c offload -n "__fish_offload_using_subcommand strip" -l sync -d 'Sync every file written, and every folder one is put in, before the command ends, as OFFLOAD_SYNC=1 does for every command (otherwise only a file that replaces one is synced, with its folder)'
complete -c offload -n "__fish_offload_using_subcommand strip" -l allow-empty -d 'Allow removing every device image'
complete -c offload -n "__fish_offload_using_subcommand strip" -l variant -d 'Make per-architecture packages: each wheel or conda package named (a CUDA build) is written, stripped to what the devices of the CUDA SMs kept load, into the folder -o names, under a name a resolver tells apart: a wheel\'s version gets a local label (`2.15.0+sm90`, `2.15.0+cu130.sm90`), a conda package\'s build string `_sm90` and its dependencies `__cuda_arch >=9.0,<10.0`'
complete -c offload -n "__fish_offload_using_subcommand strip" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c offload -n "__fish_offload_using_subcommand compress" -s j -l jobs -d 'Files worked on at once (default: the number of cores). Output comes in the order of the files, whatever the number' -r
complete -c offload -n "__fish_offload_using_subcommand compress" -s o -l output -d 'Write the result to this file (needed unless --in-place or --dry-run); for several inputs or a folder, to this folder (made if missing), which mirrors their tree' -r -F
complete -c offload -n "__fish_offload_using_subcommand compress" -l max-decompressed-size -d 'Refuse a compressed bundle that declares, or inflates to, more than this many bytes (every command that reads one: listing, extracting, rewriting, verifying, checking)' -r
complete -c offload -n "__fish_offload_using_subcommand compress" -l level -d 'Compression level' -r
complete -c offload -n "__fish_offload_using_subcommand compress" -l method -d '`zstd` (default) or `zlib`. Bundles compressed already stay as they are unless this, --level or --format-version is given: then they get what is asked' -r
complete -c offload -n "__fish_offload_using_subcommand compress" -l format-version -d 'The compressed bundle format version to write: 2 (sizes in 32 bits, read by LLVM 19 and later) or 3 (64-bit sizes, LLVM 20 and later; needed past 4 GiB). Default: what the LLVM release of OFFLOAD_LLVM_VERSION (else 22) writes: 2 for 19, 3 for 22' -r
complete -c offload -n "__fish_offload_using_subcommand compress" -s r -l recursive -d 'Walk the folders named to their last level (without it, a folder gives its own files). Files found in folders are taken when their first bytes say they may hold device code'
complete -c offload -n "__fish_offload_using_subcommand compress" -l follow -d 'Follow symbolic links found in folders (a link back into a folder being walked is a loop: reported and skipped). Without it they are skipped'
complete -c offload -n "__fish_offload_using_subcommand compress" -l in-place -d 'Replace each file (written beside it, synced, renamed over it; a file is untouched on any error of its own, and a file with several links is rewritten once)'
complete -c offload -n "__fish_offload_using_subcommand compress" -l dry-run -d 'Say what would change, and change nothing'
complete -c offload -n "__fish_offload_using_subcommand compress" -s v -l verbose -d 'Log what is done on standard error: -v what was found, chosen and written, -vv the details, -vvv everything. OFFLOAD_LOG, when set, decides instead'
complete -c offload -n "__fish_offload_using_subcommand compress" -l sync -d 'Sync every file written, and every folder one is put in, before the command ends, as OFFLOAD_SYNC=1 does for every command (otherwise only a file that replaces one is synced, with its folder)'
complete -c offload -n "__fish_offload_using_subcommand compress" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c offload -n "__fish_offload_using_subcommand decompress" -s j -l jobs -d 'Files worked on at once (default: the number of cores). Output comes in the order of the files, whatever the number' -r
complete -c offload -n "__fish_offload_using_subcommand decompress" -s o -l output -d 'Write the result to this file (needed unless --in-place or --dry-run); for several inputs or a folder, to this folder (made if missing), which mirrors their tree' -r -F
complete -c offload -n "__fish_offload_using_subcommand decompress" -l max-decompressed-size -d 'Refuse a compressed bundle that declares, or inflates to, more than this many bytes (every command that reads one: listing, extracting, rewriting, verifying, checking)' -r
complete -c offload -n "__fish_offload_using_subcommand decompress" -s r -l recursive -d 'Walk the folders named to their last level (without it, a folder gives its own files). Files found in folders are taken when their first bytes say they may hold device code'
complete -c offload -n "__fish_offload_using_subcommand decompress" -l follow -d 'Follow symbolic links found in folders (a link back into a folder being walked is a loop: reported and skipped). Without it they are skipped'
complete -c offload -n "__fish_offload_using_subcommand decompress" -l in-place -d 'Replace each file (written beside it, synced, renamed over it; a file is untouched on any error of its own, and a file with several links is rewritten once)'
complete -c offload -n "__fish_offload_using_subcommand decompress" -l dry-run -d 'Say what would change, and change nothing'
complete -c offload -n "__fish_offload_using_subcommand decompress" -s v -l verbose -d 'Log what is done on standard error: -v what was found, chosen and written, -vv the details, -vvv everything. OFFLOAD_LOG, when set, decides instead'
complete -c offload -n "__fish_offload_using_subcommand decompress" -l sync -d 'Sync every file written, and every folder one is put in, before the command ends, as OFFLOAD_SYNC=1 does for every command (otherwise only a file that replaces one is synced, with its folder)'
complete -c offload -n "__fish_offload_using_subcommand decompress" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c offload -n "__fish_offload_using_subcommand kpack" -s o -l output -d 'The folder the host files (or merged files) and .kpack/ are written to' -r -F
complete -c offload -n "__fish_offload_using_subcommand kpack" -l name -d 'The archives\' group name: archives are NAME_PROCESSOR.kpack (default: the first input\'s name up to its first dot)' -r
complete -c offload -n "__fish_offload_using_subcommand kpack" -l archive -d 'Store several processors in one archive, NAME_GROUP.kpack: GROUP=PROCESSOR,PROCESSOR (repeatable). Its path is added to the search paths written into binaries' -r
complete -c offload -n "__fish_offload_using_subcommand kpack" -l search-path -d 'A search path to write into each binary instead of the default (repeatable): relative to the binary\'s folder unless absolute, @GFXARCH@ standing for a processor. Default: .kpack/NAME_@GFXARCH@.kpack at the top of the output, and each --archive group\'s file' -r
complete -c offload -n "__fish_offload_using_subcommand kpack" -l compression -d 'Store code objects compressed, one zstd frame each (the zstd-per-kernel scheme), or plain (none). Default: none for files and trees (as AMD\'s splitter does them), zstd for wheels (as AMD\'s wheel splitter does them)' -r
complete -c offload -n "__fish_offload_using_subcommand kpack" -l prefix -d 'Wheels: the device wheels\' name prefix, as AMD names them (amd-torch-device gives amd-torch-device-gfx942). Default: amd-NAME-device, NAME the wheel\'s distribution name' -r
complete -c offload -n "__fish_offload_using_subcommand kpack" -l overlay-root -d 'Wheels: the folder of the wheel whose binaries are split and where .kpack/ goes (torch/). Default: the one top folder holding every binary with device code' -r
complete -c offload -n "__fish_offload_using_subcommand kpack" -l device-requires-dist -d 'Wheels: one more Requires-Dist of each device wheel (repeatable), @GFXARCH@ standing for its group (rocm-sdk-device-@GFXARCH@ == 7.1; given to processors\' wheels only)' -r
complete -c offload -n "__fish_offload_using_subcommand kpack" -l from -d 'With --merge: take code objects from this archive (repeatable) instead of those the binary\'s search paths find (as the runtime finds them, ROCM_KPACK_PATH and ROCM_KPACK_PATH_PREFIX honoured)' -r -F
complete -c offload -n "__fish_offload_using_subcommand kpack" -l max-decompressed-size -d 'Refuse a compressed bundle that declares, or inflates to, more than this many bytes (every command that reads one: listing, extracting, rewriting, verifying, checking)' -r
complete -c offload -n "__fish_offload_using_subcommand kpack" -s r -l recursive -d 'Split every file under the folders given, keeping their paths (binaries\' names in the archives are those paths); files without device code and symbolic links are copied'
complete -c offload -n "__fish_offload_using_subcommand kpack" -l wheels -d 'The inputs are wheels: each .whl given, and every .whl in each folder given, split into a host wheel and device wheels (a .whl file given is taken as a wheel without it). With --merge: a host wheel and its device wheels, merged into one wheel'
complete -c offload -n "__fish_offload_using_subcommand kpack" -l merge -d 'Put archived code back into split binaries instead of splitting'
complete -c offload -n "__fish_offload_using_subcommand kpack" -s v -l verbose -d 'Log what is done on standard error: -v what was found, chosen and written, -vv the details, -vvv everything. OFFLOAD_LOG, when set, decides instead'
complete -c offload -n "__fish_offload_using_subcommand kpack" -l sync -d 'Sync every file written, and every folder one is put in, before the command ends, as OFFLOAD_SYNC=1 does for every command (otherwise only a file that replaces one is synced, with its folder)'
complete -c offload -n "__fish_offload_using_subcommand kpack" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c offload -n "__fish_offload_using_subcommand links" -l release -d 'Name the links for this LLVM release (`clang-offload-bundler-19`)' -r -f -a "19\t''
22\t''
23\t''"
complete -c offload -n "__fish_offload_using_subcommand links" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c offload -n "__fish_offload_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
