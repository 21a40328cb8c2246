#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    taskboard_cli::main()
}
