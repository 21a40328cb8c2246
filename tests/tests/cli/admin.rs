//! Admin commands.
