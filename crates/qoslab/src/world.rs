//! The world: hosts the mechanisms and runs the event loop.
