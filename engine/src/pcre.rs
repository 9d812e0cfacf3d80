//! MongoDB's regular expressions (PCRE syntax) on two engines. Every pattern the `regex` crate
//! reads runs there, in time linear in the input. A pattern it refuses for look-around or
//! back-references, which only backtracking can match, runs on `fancy-regex` (a backtracking
//! engine that hands the rest of the pattern to `regex`), whose matches stop after
//! [`BACKTRACK_LIMIT`] steps: a filter then reads the value as not matching, as MongoDB reads a
//! value past PCRE's match limit, and an expression fails with MongoDB's 51156.
//!
//! Options come inline, `(?imsx)` before the pattern, as both engines read them.

use std::ops::Range;

/// The most steps one backtracking match takes: a pattern that backtracks without end (a
/// nested repetition over a long input) costs milliseconds, not the server.
pub(crate) const BACKTRACK_LIMIT: usize = 1_000_000;

/// A compiled pattern.
#[derive(Debug, Clone)]
pub(crate) enum Compiled {
    Linear(regex::Regex),
    Backtracking(Box<fancy_regex::Regex>),
}

/// Why a pattern did not compile.
#[derive(Debug)]
pub(crate) enum CompileError {
    /// It compiles past the size limit asked for.
    TooBig,
    Invalid(String),
}

/// A backtracking match stopped at [`BACKTRACK_LIMIT`] (or its stack's bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MatchLimitExceeded;

/// A match's groups as byte ranges of the input, the whole match first; `None` for a group
/// that took no part.
pub(crate) type Groups = Vec<Option<Range<usize>>>;

impl Compiled {
    /// Compiles `source` (its options inline) within `size_limit` bytes of compiled program
    /// (the `regex` crate's default when `None`).
    pub(crate) fn new(source: &str, size_limit: Option<usize>) -> Result<Compiled, CompileError> {
        let mut linear = regex::RegexBuilder::new(source);
        if let Some(limit) = size_limit {
            linear.size_limit(limit);
        }
        let refusal = match linear.build() {
            Ok(compiled) => return Ok(Compiled::Linear(compiled)),
            Err(regex::Error::CompiledTooBig(_)) => return Err(CompileError::TooBig),
            Err(e) => e.to_string(),
        };
        let mut backtracking = fancy_regex::RegexBuilder::new(source);
        backtracking.backtrack_limit(BACKTRACK_LIMIT);
        if let Some(limit) = size_limit {
            backtracking.delegate_size_limit(limit);
        }
        match backtracking.build() {
            Ok(compiled) => Ok(Compiled::Backtracking(Box::new(compiled))),
            // The linear engine's message points into the pattern; the other's is the one
            // that counts when only backtracking syntax was missing.
            Err(e) if needs_backtracking(&refusal) => Err(CompileError::Invalid(e.to_string())),
            Err(_) => Err(CompileError::Invalid(refusal)),
        }
    }

    /// Whether the pattern matches somewhere in `text`.
    pub(crate) fn is_match(&self, text: &str) -> Result<bool, MatchLimitExceeded> {
        match self {
            Compiled::Linear(r) => Ok(r.is_match(text)),
            Compiled::Backtracking(r) => r.is_match(text).map_err(|_| MatchLimitExceeded),
        }
    }

    /// The first match starting at byte `at` or later (anchors and look-behind still see the
    /// text before `at`).
    pub(crate) fn captures_at(
        &self,
        text: &str,
        at: usize,
    ) -> Result<Option<Groups>, MatchLimitExceeded> {
        Ok(match self {
            Compiled::Linear(r) => r
                .captures_at(text, at)
                .map(|c| c.iter().map(|g| g.map(|m| m.range())).collect()),
            Compiled::Backtracking(r) => r
                .captures_from_pos(text, at)
                .map_err(|_| MatchLimitExceeded)?
                .map(|c| c.iter().map(|g| g.map(|m| m.range())).collect()),
        })
    }
}

/// Whether the linear engine refused a pattern for syntax only backtracking matches.
fn needs_backtracking(refusal: &str) -> bool {
    refusal.contains("look-around") || refusal.contains("backreferences")
}

#[cfg(test)]
mod tests {
    use super::{CompileError, Compiled, MatchLimitExceeded};

    fn compiled(source: &str) -> Compiled {
        Compiled::new(source, None).unwrap()
    }

    #[test]
    fn look_around_and_back_references_run_on_the_backtracking_engine() {
        let ahead = compiled(r"^(?!system\.)");
        assert!(matches!(ahead, Compiled::Backtracking(_)));
        assert_eq!(ahead.is_match("users"), Ok(true));
        assert_eq!(ahead.is_match("system.views"), Ok(false));
        let behind = compiled(r"(?<=\$)\d+");
        assert_eq!(
            behind.captures_at("cost: $42", 0),
            Ok(Some(vec![Some(7..9)]))
        );
        let twice = compiled(r"(?i)(\w)\1");
        assert_eq!(twice.is_match("bOok"), Ok(true));
        assert_eq!(twice.is_match("abc"), Ok(false));
        assert!(matches!(compiled("^ab+c$"), Compiled::Linear(_)));
    }

    proptest::proptest! {
        /// Look-around and back-references against a model of what they mean, over strings of
        /// a small alphabet (so that prefixes and repeats are common).
        #[test]
        fn backtracking_syntax_means_what_pcre_says(
            text in "[ab.]{0,12}",
            prefix in "[ab]{1,3}",
        ) {
            let not_prefixed = compiled(&format!("^(?!{prefix})"));
            proptest::prop_assert_eq!(
                not_prefixed.is_match(&text),
                Ok(!text.starts_with(prefix.as_str()))
            );
            let doubled = compiled(r"(.)\1");
            let model = text.as_bytes().windows(2).any(|w| w[0] == w[1]);
            proptest::prop_assert_eq!(doubled.is_match(&text), Ok(model));
            // Each `b` preceded by an `a`, found from every start: as the linear engine finds
            // `ab` and reports the `b`.
            let after_a = compiled("(?<=a)b");
            let linear = compiled("ab");
            for at in 0..=text.len() {
                let behind = after_a.captures_at(&text, at).unwrap();
                let plain = linear
                    .captures_at(&text, at.saturating_sub(1))
                    .unwrap()
                    .and_then(|g| g[0].clone())
                    .map(|r| r.start + 1..r.end)
                    .filter(|r| r.start >= at);
                proptest::prop_assert_eq!(behind.map(|g| g[0].clone().unwrap()), plain);
            }
        }
    }

    #[test]
    fn a_runaway_backtracking_match_stops_at_its_limit() {
        let runaway = compiled(r"^(a+)+\1$");
        let input = format!("{}b", "a".repeat(64));
        assert_eq!(runaway.is_match(&input), Err(MatchLimitExceeded));
    }

    #[test]
    fn invalid_patterns_say_why() {
        for bad in ["(", "a{2,1}", r"(?<=a+)b\1"] {
            match Compiled::new(bad, None) {
                Err(CompileError::Invalid(why)) => assert!(!why.is_empty(), "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(matches!(
            Compiled::new("a{1000}{1000}", Some(1 << 10)),
            Err(CompileError::TooBig)
        ));
    }
}
