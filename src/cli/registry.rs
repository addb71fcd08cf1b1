//! The one list of `offload`'s commands. Each command is an entry here (its name, its line in
//! `offload help`, its command line and how it runs) and a file of its own under `cli/`; the
//! usage text, the dispatch, the manual pages and the shell completions are all made from this
//! list, so none of them can leave a command out or describe it differently.

use std::ffi::OsString;
use std::io::{self, Write};

use clap::Parser;

use crate::cli::subcommand::{definition, run_parsed, Subcommand};
use crate::cli::{
    check, du, extract, kpack, links, ls, parse_args, personalities, rewrite, stdout_failed,
    targets, verify, wrapper,
};
use crate::target::processor::LlvmVersion;

/// What a command does when it is run.
#[derive(Clone, Copy)]
pub enum Action {
    /// Runs with the arguments after the command's name; gives the exit status.
    Run(fn(&[OsString]) -> i32),
    /// Prints the usage of the commands of the list.
    Help,
    /// Prints the completion script of a shell for the commands of the list.
    Completions,
}

/// One command of `offload`.
#[derive(Clone, Copy)]
pub struct Entry {
    /// Its name on the command line (`ls`).
    pub name: &'static str,
    /// What `offload help` says of it, in one paragraph (wrapped when printed).
    pub summary: &'static str,
    /// Its command line, for the manual pages and the completions.
    pub definition: fn() -> clap::Command,
    /// What it does.
    pub action: Action,
}

/// An entry for the clap-parsed command `A`.
fn parsed<A: Subcommand>(name: &'static str, summary: &'static str) -> Entry {
    Entry {
        name,
        summary,
        definition: definition::<A>,
        action: Action::Run(run_parsed::<A>),
    }
}

/// The commands of `offload`, in the order `offload help` lists them.
pub struct Commands {
    entries: Vec<Entry>,
}

impl Commands {
    /// Every command of `offload`.
    pub fn standard() -> Commands {
        let entries = vec![
            Entry {
                name: "bundler",
                summary: "clang-offload-bundler 19, 22 or 23, drop-in: same options, same output bytes",
                definition: personalities::bundler::command,
                action: Action::Run(crate::cli::run_bundler),
            },
            Entry {
                name: "packager",
                summary: "clang-offload-packager 19 or llvm-offload-binary 22 and 23, drop-in: same \
                          options, same output bytes",
                definition: || personalities::packager::command(LlvmVersion::DEFAULT),
                action: Action::Run(crate::cli::run_packager),
            },
            parsed::<ls::Args>(
                "ls",
                "list the device images in files (--json for a machine-readable list), also split \
                 binaries' code in .kpack archives and .kpack archives themselves",
            ),
            Entry {
                name: "extract",
                summary: "write the device images a GPU loads (--arch gfx1101: native, else generic \
                          code) (--device ISA: the one code object the HIP runtime loads per bundle, \
                          or the kpack loader finds in .kpack archives)",
                definition: definition::<extract::Args>,
                action: Action::Run(extract::run_subcommand),
            },
            parsed::<check::Args>(
                "check",
                "what each GPU loads from a program and its libraries (--device, else this \
                 machine), and for split binaries which .kpack archive it finds, or every path \
                 searched",
            ),
            parsed::<verify::Args>(
                "verify",
                "inflate and hash every compressed bundle of files (ls and extract inflate only \
                 what they need); ls --verify lists, then verifies; .kpack archives, and the \
                 archive sets of split binaries, checked whole",
            ),
            parsed::<du::Args>(
                "du",
                "bytes of device code per target, per file and in total, stored and inflated \
                 (--keep gfx942: what strip would remove; --json; --html: a treemap page; \
                 --kernels: each function's size, and code stored twice)",
            ),
            parsed::<targets::Args>(
                "targets",
                "the targets every unit of device code in files carries, and those some carry \
                 (--format debian|cmake|torch, --json), and the oldest CUDA driver they need",
            ),
            Entry {
                name: "wrapper",
                summary: "clang-offload-wrapper: a host object (or .ll, .bc) that registers OpenMP \
                          images; with --kind=openmp|cuda|hip, llvm-offload-wrapper's module (.o/.obj \
                          an ELF or COFF object, .ll IR text, else bitcode); --kind=hip --bundle a.co \
                          b.co bundles code objects first, as clang does",
                definition: wrapper::command,
                action: Action::Run(wrapper::run),
            },
            parsed::<rewrite::StripArgs>(
                "strip",
                "keep only some targets' device code (--keep gfx90a), in place or to a new file",
            ),
            parsed::<rewrite::CompressArgs>(
                "compress",
                "compress the bundles of a file (--format-version 2|3), in linked programs and \
                 shared libraries too (ELF; PE executables and DLLs)",
            ),
            parsed::<rewrite::DecompressArgs>(
                "decompress",
                "the reverse of compress: every compressed bundle of a file stored plain",
            ),
            parsed::<kpack::Args>(
                "kpack",
                "split programs and libraries into host files and per-processor .kpack archives \
                 (-o DIR, -r for trees); --merge puts archived code back as bundles",
            ),
            parsed::<links::Args>(
                "links",
                "symbolic links to this program in a folder, under the LLVM tools' names below \
                 (--release 19|22|23: names ending in -19, -22 or -23), so that a toolchain finds \
                 them",
            ),
            Entry {
                name: "completions",
                summary: "the completion script of a shell (bash, zsh, fish, elvish, powershell)",
                definition: definition::<CompletionsArgs>,
                action: Action::Completions,
            },
            Entry {
                name: "help",
                summary: "print this text",
                definition: || clap::Command::new("help").about("Print the usage of offload"),
                action: Action::Help,
            },
        ];
        Commands { entries }
    }

    /// Adds a command at the end of the list.
    pub fn add(&mut self, entry: Entry) {
        self.entries.push(entry);
    }

    /// Every command, in order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Runs `offload COMMAND ARGS...`, `rest` being the command and its arguments; returns the
    /// exit status.
    pub fn run(&self, rest: &[OsString]) -> i32 {
        let Some(first) = rest.first() else {
            return print_or_code(&self.usage(), 1);
        };
        let args = rest.get(1..).unwrap_or_default();
        let name = first.to_str();
        match name {
            Some("--help" | "-h") => return print_or_code(&self.usage(), 0),
            Some("--version" | "-V") => return print_or_code(&crate::cli::version_text(), 0),
            _ => {}
        }
        let Some(entry) = self.entries.iter().find(|e| Some(e.name) == name) else {
            let _ = writeln!(
                io::stderr(),
                "offload: error: unknown command '{}' (try `offload help`)",
                crate::io::shown(first)
            );
            return 2;
        };
        match entry.action {
            Action::Run(run) => run(args),
            Action::Help => print_or_code(&self.usage(), 0),
            Action::Completions => self.run_completions(args),
        }
    }

    /// What `offload help` prints: every command with its summary, then what they share.
    pub fn usage(&self) -> String {
        let width = self.entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
        let mut text = String::from(
            "offload: GPU offload fat binary tools\n\nUSAGE: offload <COMMAND> [ARGS...]\n\nCOMMANDS:\n",
        );
        for entry in &self.entries {
            let indent = " ".repeat(width + 4);
            let mut lines = wrap(entry.summary, LINE - indent.len()).into_iter();
            let first = lines.next().unwrap_or_default();
            text.push_str(&format!("  {:width$}  {first}\n", entry.name));
            for line in lines {
                text.push_str(&format!("{indent}{line}\n"));
            }
        }
        for paragraph in self.shared_paragraphs() {
            text.push('\n');
            for line in wrap(&paragraph, LINE) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        text
    }

    /// What the commands share, in paragraphs: which take many files, `-v` and `--sync` (read
    /// from their command lines), and the LLVM names the program answers to.
    pub fn shared_paragraphs(&self) -> Vec<String> {
        let taking = |option: &str| self.names_taking(option);
        vec![
            format!(
                "{} take many files and folders (-r walks trees), read N at once (-j N; output \
                 in the order of the files) and, for more than one file, end with a summary.",
                taking("-j")
            ),
            format!(
                "{} take -v (-vv, -vvv) to log what they do on standard error. \
                 OFFLOAD_LOG=offload=debug (a tracing filter) logs for every command.",
                taking("-v")
            ),
            format!(
                "A file that replaces one (in place, or over an existing file) is synced to the \
                 disk before it takes its place, and its folder after; new files are not. {} take \
                 --sync to sync every file and folder written; OFFLOAD_SYNC=1 does so for every \
                 command.",
                taking("--sync")
            ),
            "Started through a link named clang-offload-bundler or offload-bundler, the program \
             behaves as offload bundler; through clang-offload-packager, offload-packager or \
             llvm-offload-binary, as offload packager; through clang-offload-wrapper or \
             llvm-offload-wrapper, as that wrapper (offload links makes the links). A -19, -22 or \
             -23 at the end of the name, else OFFLOAD_LLVM_VERSION, else 23 chooses the LLVM \
             release they stand in for."
                .to_string(),
        ]
    }

    /// The commands whose command line has `option` (`-v`, `--sync`), as a list in words.
    fn names_taking(&self, option: &str) -> String {
        let has = |arg: &clap::Arg| match option.strip_prefix("--") {
            Some(long) => arg.get_long() == Some(long),
            None => option.strip_prefix('-').and_then(|s| s.chars().next()) == arg.get_short(),
        };
        let names: Vec<&str> = self
            .entries
            .iter()
            .filter(|entry| (entry.definition)().get_arguments().any(has))
            .map(|entry| entry.name)
            .collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_string(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// What `offload`'s manual page says after the list of commands: what the program is for, then
    /// what the commands share, as `offload help` says it.
    pub fn description(&self) -> String {
        let intro = "offload lists, extracts, checks, strips, compresses and splits the device code \
    (AMDGPU code objects, PTX, cubins, LLVM bitcode) that GPU offload fat binaries carry beside host \
    code, in objects, programs, shared libraries and archives, and stands in for LLVM's \
    clang-offload-bundler, clang-offload-packager (llvm-offload-binary), clang-offload-wrapper and \
    llvm-offload-wrapper with the same command lines and output bytes.";
        std::iter::once(intro.to_string())
            .chain(self.shared_paragraphs())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// The completion script of `shell` for `offload` with `commands`.
    pub fn completion_script(&self, shell: clap_complete::Shell) -> Vec<u8> {
        let mut out = Vec::new();
        clap_complete::generate(shell, &mut self.clap(), "offload", &mut out);
        out
    }

    /// Runs `offload completions` with `args` (without the program name) and returns the exit
    /// status.
    fn run_completions(&self, args: &[OsString]) -> i32 {
        let args: CompletionsArgs = match parse_args(COMPLETIONS, args) {
            Ok(a) => a,
            Err(code) => return code,
        };
        let text = self.completion_script(args.shell);
        match crate::cli::write_flushed(&mut io::stdout().lock(), &text) {
            Ok(()) => 0,
            Err(e) => stdout_failed(COMPLETIONS, &mut io::stderr().lock(), &e),
        }
    }

    /// The `offload` command with every command of the list as a clap subcommand, each under
    /// its own name and with its summary: what the manual pages and completions are made from.
    pub fn clap(&self) -> clap::Command {
        let subcommands = self
            .entries
            .iter()
            .filter(|entry| !matches!(entry.action, Action::Help))
            .map(Entry::subcommand);
        clap::Command::new("offload")
            .version(env!("CARGO_PKG_VERSION"))
            .about("GPU offload fat binary tools")
            .long_about(self.description())
            .disable_help_subcommand(true)
            .subcommand_required(true)
            .subcommands(subcommands)
    }
}

/// The name `offload completions` gives itself in messages.
const COMPLETIONS: &str = "offload completions";

/// Print the completion script of a shell for offload: its subcommands, their options and the
/// values they take. Load it in the running shell (bash: `source <(offload completions bash)`)
/// or save it where the shell looks for completions (bash:
/// ~/.local/share/bash-completion/completions/offload, zsh: a file _offload in a folder of
/// $fpath, fish: ~/.config/fish/completions/offload.fish).
#[derive(Debug, Parser)]
#[command(name = "offload completions")]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    shell: clap_complete::Shell,
}

impl Entry {
    /// The command as a subcommand of `offload`: its name, its summary as the short help, and
    /// its own description as the long one.
    pub fn subcommand(&self) -> clap::Command {
        let command = (self.definition)();
        let long = command.get_long_about().or(command.get_about()).cloned();
        let command = match long {
            Some(long) => command.long_about(long),
            None => command,
        };
        command.about(self.summary).name(self.name)
    }
}

/// The width `offload help` wraps its lines to.
const LINE: usize = 96;

/// `text`'s words in lines of at most `width` characters (a longer word alone on its line).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Prints `text` on standard output and gives `code`, or the status of a failed output.
fn print_or_code(text: &str, code: i32) -> i32 {
    crate::cli::print("offload", text).map_or_else(|failed| failed, |()| code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::general::GeneralOpts;

    /// A command made here, to show that adding one takes its own file and one entry.
    #[derive(Debug, Parser)]
    #[command(name = "offload hello")]
    /// Greets someone.
    struct HelloArgs {
        /// Whom to greet.
        #[arg(long)]
        name: String,
        #[command(flatten)]
        general: GeneralOpts,
    }

    impl Subcommand for HelloArgs {
        const PROG: &'static str = "offload hello";
        fn general(&self) -> Option<GeneralOpts> {
            Some(self.general)
        }
        fn run(self) -> i32 {
            if self.name == "world" {
                7
            } else {
                3
            }
        }
    }

    fn with_hello() -> Commands {
        let mut commands = Commands::standard();
        commands.add(parsed::<HelloArgs>("hello", "greet someone by name"));
        commands
    }

    #[test]
    fn a_command_added_runs_and_appears_in_usage_pages_and_completions() {
        let commands = with_hello();
        let args = |list: &[&str]| list.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(commands.run(&args(&["hello", "--name", "world"])), 7);
        assert_eq!(commands.run(&args(&["hello", "--name", "you"])), 3);
        assert_eq!(
            commands.run(&args(&["hello"])),
            2,
            "a missing option is a usage error"
        );
        let usage = commands.usage();
        assert!(
            usage.contains("\n  hello        greet someone by name\n"),
            "{usage}"
        );
        assert!(
            flat(&usage).contains(" kpack and hello take -v "),
            "{usage}"
        );
        let page = commands.clap().find_subcommand("hello").cloned().unwrap();
        assert_eq!(
            page.get_about().unwrap().to_string(),
            "greet someone by name"
        );
        assert!(page.get_arguments().any(|arg| arg.get_id() == "name"));
        let script = commands.completion_script(clap_complete::Shell::Bash);
        let script = String::from_utf8(script).unwrap();
        assert!(
            script.contains("offload__subcmd__hello"),
            "bash completes hello"
        );
        assert!(
            script.contains(" links completions hello\""),
            "bash offers hello"
        );
        assert!(!Commands::standard().usage().contains("hello"));
    }

    #[test]
    fn the_usage_lists_every_command_once_and_says_who_takes_the_shared_options() {
        let usage = Commands::standard().usage();
        for entry in Commands::standard().entries() {
            let line = format!("\n  {:11}  ", entry.name);
            assert_eq!(usage.matches(&line).count(), 1, "{}: {usage}", entry.name);
        }
        let flat = flat(&usage);
        assert!(
            flat.contains(
                "\nls, extract, check, verify, du, targets, strip, compress and decompress take many files"
            ),
            "{usage}"
        );
        assert!(flat.contains(
            "\nls, extract, check, verify, du, targets, wrapper, strip, compress, decompress and kpack take -v"
        ), "{usage}");
        assert!(
            flat.contains(" extract, wrapper, strip, compress, decompress and kpack take --sync"),
            "{usage}"
        );
        assert!(usage.lines().all(|line| line.len() <= LINE), "{usage}");
    }

    /// `text` with each paragraph on one line.
    fn flat(text: &str) -> String {
        text.split("\n\n")
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn words_wrap_at_the_width_and_a_long_word_stands_alone() {
        assert_eq!(wrap("a bb ccc dddd", 6), ["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("abcdefgh ij", 4), ["abcdefgh", "ij"]);
        assert!(wrap("  ", 4).is_empty());
    }
}
