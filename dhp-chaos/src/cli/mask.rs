//! Passwords never reach a file of the run: the command line saved in
//! `results.json` and the replay command (in every round's report) are
//! masked here. (A minimal masking of the run's own; the lead unifies it
//! with dhp-core's store-location masking.)

/// A command-line word with every password in it replaced by `***`: the
/// `user:PASSWORD@` of a URL, and `password=VALUE` (a URL query parameter
/// or a libpq keyword), case-insensitively.
pub fn mask_arg(arg: &str) -> String {
    let mut s = mask_userinfo(arg);
    let mut from = 0;
    while let Some(at) = s[from..].to_ascii_lowercase().find("password=").map(|i| from + i) {
        let start = at + "password=".len();
        let end = s[start..].find(['&', ' ', '\'', '"']).map_or(s.len(), |i| start + i);
        s.replace_range(start..end, "***");
        from = start + 3;
    }
    s
}

/// `scheme://user:PASSWORD@host…` → `scheme://user:***@host…` (anywhere in
/// the word: `--store=postgres://…` too).
fn mask_userinfo(arg: &str) -> String {
    let Some(s) = arg.find("://") else { return arg.to_string() };
    let rest = &arg[s + 3..];
    let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..auth_end].rsplit_once('@') {
        Some((userinfo, _)) => match userinfo.split_once(':') {
            Some((user, _)) => {
                format!("{}{user}:***{}", &arg[..s + 3], &rest[userinfo.len()..])
            }
            None => arg.to_string(),
        },
        None => arg.to_string(),
    }
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
