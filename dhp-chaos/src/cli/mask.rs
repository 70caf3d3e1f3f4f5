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

#[cfg(test)]
mod tests {
    use super::mask_arg;

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
