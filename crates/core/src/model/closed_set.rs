//! Closed sets of the contract: [`closed_set!`] declares an enum from one list of
//! (variant, JSON name) pairs, and from that list alone derives its serde names, its
//! [`name`](closed_set!) and its `ALL` array, so the three cannot drift apart. Also
//! the one closed set several blocks share ([`Outcome`]).

/// Declares an enum over a closed set of JSON names:
///
/// ```ignore
/// closed_set! {
///     /// Doc of the enum.
///     pub enum Runner {
///         /// Doc of the variant.
///         Cli = "cli",
///         Local = "local",
///     }
/// }
/// ```
///
/// gives `Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize` with
/// `#[serde(rename = "cli")]` on each variant, `Runner::ALL` (every variant, in the
/// order written, its length counted by the compiler), `name()` (the JSON name) and
/// `Display` (the name). Further attributes (`#[derive(Default)]`, `#[default]` on a
/// variant) pass through. Exported for the lab's and the function's crates (the
/// crate using it needs `serde`).
#[macro_export]
macro_rules! closed_set {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $text)] $variant, )+
        }

        impl $name {
            /// Every variant, in the order declared.
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];

            /// The JSON name of the variant.
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $text, )+
                }
            }

            /// The variant whose JSON name is `text`.
            #[allow(dead_code)]
            pub fn from_name(text: &str) -> Option<$name> {
                $name::ALL.into_iter().find(|v| v.name() == text)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

pub use crate::closed_set;

closed_set! {
    /// The S3 client that makes a sweep's GETs (request `clients`, a row's
    /// `s3_client`): `sdk`, aws-sdk-s3 as an application uses it; `lean`, signed GETs
    /// with the least client work (docs/lean-client.md), a measuring instrument.
    #[derive(Default)]
    pub enum Client {
        #[default]
        Sdk = "sdk",
        Lean = "lean",
    }
}

impl Client {
    /// For `skip_serializing_if`: the default is not written.
    pub fn is_sdk(&self) -> bool {
        *self == Client::Sdk
    }
}

closed_set! {
    /// How a step of the run ended: a fan-out child, a memory size.
    pub enum Outcome {
        Ok = "ok",
        Failed = "failed",
    }
}

#[cfg(test)]
// The macro's methods are `pub` for the sets the crate exports; this one is private.
#[allow(unreachable_pub)]
mod tests {
    closed_set! {
        /// A test set.
        enum Sample {
            /// One.
            One = "one",
            TwoWords = "two_words",
            Kebab = "kebab-case",
        }
    }

    #[test]
    fn names_serde_and_all_agree() {
        assert_eq!(Sample::ALL.len(), 3);
        for s in Sample::ALL {
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.name()));
            assert_eq!(serde_json::from_str::<Sample>(&json).unwrap(), s);
            assert_eq!(Sample::from_name(s.name()), Some(s));
            assert_eq!(s.to_string(), s.name());
        }
        assert_eq!(Sample::TwoWords.name(), "two_words");
        assert_eq!(Sample::from_name("three"), None);
    }
}
