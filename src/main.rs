//! The `mmr-service` binary: parse the command line, run it, turn an error into a message on
//! stderr and a non-zero exit code. Everything else lives in the library.

use std::process::ExitCode;

use clap::Parser;
use mmr_service::cli::{self, Cli};

/// An allocator that gives memory back to the system once it is freed (`Cargo.toml` says what
/// glibc's kept).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    match cli::run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", message(&error));
            ExitCode::FAILURE
        }
    }
}

/// `error` and its causes, each after a colon, leaving out a cause whose text the one before
/// already shows (sqlx and reqwest print their source inside their own message).
fn message(error: &anyhow::Error) -> String {
    let mut text = String::new();
    let mut last = String::new();
    for cause in error.chain() {
        let cause = cause.to_string();
        if last.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
        last = cause;
    }
    text
}

#[cfg(test)]
mod tests {
    use anyhow::Context;

    use super::message;

    #[test]
    fn a_cause_already_shown_is_not_repeated() {
        let io = std::io::Error::other("refused");
        let error = Err::<(), _>(anyhow::Error::new(io).context("sending: refused"))
            .context("opening")
            .expect_err("an error");
        assert_eq!(message(&error), "opening: sending: refused");
        let error = anyhow::anyhow!("inner").context("outer");
        assert_eq!(message(&error), "outer: inner");
    }
}
