//! Collected, spanned errors: every stage reports all it finds, and nothing panics on input.

use std::cell::RefCell;
use std::fmt::Display;

use quote::ToTokens;

/// Errors found while deriving; must be checked with [`Ctxt::check`] before it is dropped.
pub struct Ctxt {
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// An error pointing at `tokens`.
    pub fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, message: M) {
        self.syn_error(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    pub fn syn_error(&self, error: syn::Error) {
        if let Some(errors) = self.errors.borrow_mut().as_mut() {
            errors.push(error);
        }
    }

    /// All errors, combined into one.
    pub fn check(self) -> Result<(), syn::Error> {
        let mut errors = self.errors.take().unwrap_or_default().into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for rest in errors {
            combined.combine(rest);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        // A derive bug, not bad input: every path checks its context.
        assert!(
            std::thread::panicking() || self.errors.borrow().is_none(),
            "forgot to check for errors"
        );
    }
}
