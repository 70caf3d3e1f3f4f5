//! The page: one HTML document, its script and its style sheet, compiled
//! into the binary (no inline script: the Content-Security-Policy allows
//! only `'self'`).

pub const APP_JS: &str = include_str!("assets/app.js");
pub const APP_CSS: &str = include_str!("assets/app.css");
const INDEX: &str = include_str!("assets/index.html");

pub fn index() -> String {
    INDEX.to_string()
}

/// The login form; `note` is one of this program's own messages.
pub fn login_page(note: Option<&'static str>) -> String {
    let note = note.map(|n| format!("<p class=\"note\">{n}</p>")).unwrap_or_default();
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>dhp dashboard: log in</title>\
         <link rel=\"stylesheet\" href=\"/app.css\"></head><body class=\"login\"><h1>dhp dashboard</h1>{note}\
         <form method=\"post\" action=\"/login\"><label>Token <input type=\"password\" name=\"token\" \
         autocomplete=\"current-password\" autofocus></label> <button type=\"submit\">Log in</button></form>\
         <p>The token is the one <code>dhp dashboard</code> was started with (<code>--token</code> or \
         <code>DHP_DASHBOARD_TOKEN</code>).</p></body></html>"
    )
}
