//! Remote-only commands.
