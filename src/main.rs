//! The `mmr-service` binary: parse the command line, run it, turn an error into a message on
//! stderr and a non-zero exit code. Everything else lives in the library.

use std::process::ExitCode;

use clap::Parser;
use mmr_service::cli::{self, Cli};

fn main() -> ExitCode {
    match cli::run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
