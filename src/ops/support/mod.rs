//! What several operations share: the walker of files and folders (`inputs`), the memory
//! budget of inflation (`inflating`), progress (`progress`), this machine's GPUs (`gpus`),
//! finding external tools (`tool_path`) and table columns (`columns`).

pub mod columns;
pub mod gpus;
pub mod inflating;
pub mod inputs;
pub mod progress;
pub mod tool_path;
