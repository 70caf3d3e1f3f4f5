//! Passwords never reach a file of the run: the command line saved in
//! `results.json` and the replay command (in every round's report) are
//! masked here, by the masking every program of the workspace uses
//! (`dhp_secrets::mask_secrets`).

/// A command-line word with every password in it replaced by `***`: the
/// `user:PASSWORD@` of a URL, and `password=VALUE` (a URL query parameter
/// or a libpq keyword), case-insensitively.
pub fn mask_arg(arg: &str) -> String {
    dhp_secrets::mask_secrets(arg)
}

/// `v` as pretty JSON with every password in it masked: a store URL can
/// reach a shared file through any field (a harness error's text, a
/// report's note), not only the saved command line.
pub fn masked_json(v: &serde_json::Value) -> serde_json::Result<String> {
    Ok(dhp_secrets::mask_secrets(&serde_json::to_string_pretty(v)?))
}

#[cfg(test)]
mod tests {
    use super::{mask_arg, masked_json};

    #[test]
    fn no_field_of_results_json_carries_a_password() {
        let v = serde_json::json!({
            "command": ["dhp-chaos"],
            "harness_error": "connecting to postgres://chaos:S3CRET@127.0.0.1:5432/db: refused",
            "rounds": [{"notes": ["store host=h password=S3CRET dbname=d"]}],
        });
        let text = masked_json(&v).unwrap();
        assert!(!text.contains("S3CRET"), "{text}");
        assert!(text.contains("postgres://chaos:***@127.0.0.1"), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).expect("still JSON");
        assert_eq!(back["command"][0], "dhp-chaos");
    }

    #[test]
    fn passwords_are_masked_in_every_form() {
        assert_eq!(mask_arg("postgres://u:SECRET@h:5/db"), "postgres://u:***@h:5/db");
        assert_eq!(mask_arg("--store=postgres://u:SECRET@h/db?x=1"), "--store=postgres://u:***@h/db?x=1");
        assert_eq!(
            mask_arg("postgres://u@h/db?password=SECRET&sslmode=off"),
            "postgres://u@h/db?password=***&sslmode=off"
        );
        assert_eq!(mask_arg("host=h PassWord=SECRET dbname=d"), "host=h PassWord=*** dbname=d");
        assert_eq!(mask_arg("postgres://u:a@b@h/db"), "postgres://u:***@h/db");
        assert_eq!(mask_arg("--seed"), "--seed");
        assert_eq!(mask_arg("/tmp/x"), "/tmp/x");
    }
}
