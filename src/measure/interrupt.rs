//! Turning SIGINT/SIGTERM/SIGHUP into a flag the harness polls between
//! samples, so an interrupted run stops cleanly (children reaped, temporary
//! files removed) and keeps what it has measured. A second signal of the same
//! kind terminates at once, as users expect from a second Ctrl-C.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use crate::error::{Error, Result};

/// A shared "stop soon" flag.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A flag no signal sets (for tests and library callers with their own handling).
    pub fn none() -> Self {
        Self::default()
    }

    /// Installs the handlers for SIGINT, SIGTERM and SIGHUP.
    pub fn install() -> Result<Self> {
        let flag = Arc::new(AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            // Order matters: the conditional shutdown must see the flag before this signal sets it.
            signal_hook::flag::register_conditional_shutdown(sig, 2, Arc::clone(&flag))
                .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&flag)))
                .map_err(|e| Error::io("installing signal handlers", e))?;
        }
        Ok(Self(flag))
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Sets the flag (as a signal would).
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// `Err(Interrupted)` once the flag is set.
    pub fn check(&self) -> Result<()> {
        if self.is_set() {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }
}
