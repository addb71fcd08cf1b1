//! What every `offload` subcommand shares: `-v` and the log on standard error it switches on, and
//! the cap on what a compressed bundle may inflate to; and what those that write files share:
//! `--sync`.
//!
//! The operations log through `tracing`; nothing is written until a subscriber is installed.
//! `OFFLOAD_LOG` (an `EnvFilter` string such as `offload=debug`) installs one for every command
//! and personality; `-v` installs one for the subcommands that take it. With neither, the
//! commands print exactly what they printed before.

use std::io::{IsTerminal, Write};

use clap::ArgAction;

use crate::format::ccob::DEFAULT_MAX_DECOMPRESSED;
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::fmt::format::FmtSpan;

/// The environment variable that chooses what is logged, for every command and personality.
pub const LOG_VARIABLE: &str = "OFFLOAD_LOG";

/// Options shared by the `offload` subcommands (flattened into each, as wasm-tools'
/// `GeneralOpts`).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct GeneralOpts {
    /// Log what is done on standard error: -v what was found, chosen and written, -vv the
    /// details, -vvv everything. OFFLOAD_LOG, when set, decides instead.
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    pub verbose: u8,
    /// Refuse a compressed bundle that declares, or inflates to, more than this many bytes
    /// (every command that reads one: listing, extracting, rewriting, verifying, checking).
    #[arg(long = "max-decompressed-size", value_name = "BYTES", default_value_t = DEFAULT_MAX_DECOMPRESSED)]
    pub max_decompressed: u64,
}

impl Default for GeneralOpts {
    fn default() -> Self {
        GeneralOpts {
            verbose: 0,
            max_decompressed: DEFAULT_MAX_DECOMPRESSED,
        }
    }
}

impl GeneralOpts {
    /// The most detailed level `-v` asks for; `OFF` without it.
    pub fn level(&self) -> LevelFilter {
        match self.verbose {
            0 => LevelFilter::OFF,
            1 => LevelFilter::INFO,
            2 => LevelFilter::DEBUG,
            _ => LevelFilter::TRACE,
        }
    }

    /// Installs the log `-v` asks for. A log `OFFLOAD_LOG` installed first (see
    /// [`install_log_from_env`]) stays: there is only one, and the first wins.
    pub fn install_log(&self) {
        let level = self.level();
        if level != LevelFilter::OFF {
            install(EnvFilter::default().add_directive(level.into()));
        }
    }
}

/// Options shared by the `offload` subcommands that write files.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct OutputOpts {
    /// Sync every file written, and every folder one is put in, before the command ends, as
    /// OFFLOAD_SYNC=1 does for every command (otherwise only a file that replaces one is
    /// synced, with its folder).
    #[arg(long)]
    pub sync: bool,
}

impl OutputOpts {
    /// Makes the process sync every output when `--sync` is given; without it, what
    /// `OFFLOAD_SYNC` chose at the start ([`syncing_from_env`]) stays.
    pub fn apply(self) {
        if self.sync {
            crate::io::set_syncing(crate::io::Syncing::Everything);
        }
    }
}

/// Makes the process sync every output when `OFFLOAD_SYNC` asks for it, for every command and
/// personality (the LLVM names take no `--sync`: their command lines are LLVM's).
pub fn syncing_from_env() {
    crate::io::set_syncing(crate::io::Syncing::from_env());
}

/// Installs a log on standard error filtered by `OFFLOAD_LOG`, when it is set. A filter that
/// does not parse is reported (the program goes on without a log).
pub fn install_log_from_env() {
    let Some(text) = std::env::var_os(LOG_VARIABLE).filter(|v| !v.is_empty()) else {
        return;
    };
    let text = text.to_string_lossy();
    match EnvFilter::try_new(&text) {
        Ok(filter) => install(filter),
        Err(e) => {
            let _ = writeln!(
                std::io::stderr(),
                "offload: warning: {LOG_VARIABLE}={text:?} is not a log filter ({e}); not logging"
            );
        }
    }
}

/// Installs a log on standard error showing what `filter` lets through: one line per event,
/// under the spans it happened in, and one as each span closes (with the time it took); each
/// line starts with the seconds since the program started; colours only on a terminal.
fn install(filter: EnvFilter) {
    // Failing means a log is already installed, which is the one to keep.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_timer(tracing_subscriber::fmt::time::uptime())
        .with_target(false)
        .try_init();
}
