use super::rules::LITTLE_TEXT;
use super::*;

fn detect_with(status: u16, headers: &[(&str, &str)], body: &str) -> Option<Wall> {
    let headers: Vec<(String, String)> = headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    detect(&Answer { status, headers: &headers, body: body.as_bytes() })
}

fn vendor(status: u16, headers: &[(&str, &str)], body: &str) -> Option<Vendor> {
    detect_with(status, headers, body).map(|w| w.vendor)
}

/// A real page: plenty of text in paragraphs, with `extra` inside.
fn page(extra: &str) -> String {
    let text = "<p>Our spring collection is here, with linen shirts, trousers and light jackets.</p>\n".repeat(40);
    format!("<!doctype html><html><head><title>Shop</title></head><body>{extra}{text}</body></html>")
}

const CF: &[(&str, &str)] = &[("server", "cloudflare"), ("cf-ray", "8f1b2c3d4e5f6a7b-FRA")];

#[test]
fn cloudflare_header_challenge() {
    let wall = detect_with(403, &[("cf-mitigated", "Challenge")], "").unwrap();
    assert_eq!(wall.vendor, Vendor::Cloudflare);
    assert_eq!(wall.evidence, "header cf-mitigated: challenge");
}

#[test]
fn cloudflare_challenge_markers_count_on_any_status() {
    let opt = "<script>(function(){window._cf_chl_opt={cvId:'3',cZone:'example.com'};}());</script>";
    assert_eq!(vendor(200, &[], opt), Some(Vendor::Cloudflare));
    let form = r#"<form id="challenge-form" action="/?__cf_chl_f_tk=abc" method="POST"></form>"#;
    assert_eq!(vendor(403, &[], form), Some(Vendor::Cloudflare));
    let orchestrate = r#"<script src="/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1?ray=8f"></script>"#;
    assert_eq!(vendor(503, &[], orchestrate), Some(Vendor::Cloudflare));
}

#[test]
fn cloudflare_just_a_moment_and_turnstile_need_a_refusal_from_cloudflare() {
    let moment = "<html><head><title>Just a moment...</title></head><body>Checking</body></html>";
    assert_eq!(detect_with(403, CF, moment).unwrap().evidence, "\"Just a moment...\" on a 403 from Cloudflare");
    assert_eq!(vendor(403, &[("server", "nginx")], moment), None);
    assert_eq!(vendor(200, CF, moment), None, "a post titled so is not a wall");
    let turnstile = r#"<div class="cf-turnstile" data-sitekey="0x4AAA"></div>"#;
    assert_eq!(vendor(503, CF, turnstile), Some(Vendor::Cloudflare));
}

#[test]
fn cloudflare_block_page_and_error_codes() {
    let block = r#"<title>Attention Required! | Cloudflare</title><div id="cf-error-details">
        <h1>Sorry, you have been blocked</h1><span class="cf-error-code">1020</span></div>"#;
    let wall = detect_with(403, CF, block).unwrap();
    assert_eq!(wall.vendor, Vendor::Cloudflare);
    assert_eq!(wall.evidence, "the block page (\"Sorry, you have been blocked\")");
    let denied = r#"<span class="cf-error-code">1020</span> Access denied"#;
    assert_eq!(detect_with(403, &[], denied).unwrap().evidence, "error 1020 on a 403");
    let down = r#"<div id="cf-error-details"><span class="cf-error-code">521</span> Web server is down</div>"#;
    assert_eq!(vendor(521, CF, down), None, "an origin error is not a wall");
    let dns = r#"<span class="cf-error-code">1016</span> Origin DNS error"#;
    assert_eq!(vendor(530, CF, dns), None);
}

#[test]
fn cloudflare_waiting_room() {
    let json = r#"{"cfWaitingRoom":{"inWaitingRoom":true,"waitTime":5}}"#;
    assert_eq!(vendor(200, &[], json), Some(Vendor::Queue));
    let cookie = [("set-cookie", "__cfwaitingroom=ChhBWE; Path=/; HttpOnly")];
    let room = "<h1>You are now in line.</h1><p>Your estimated wait time is 5 minutes.</p>";
    assert_eq!(vendor(200, &cookie, room), Some(Vendor::Queue));
    assert_eq!(vendor(200, &cookie, &page("")), None, "the cookie rides admitted pages too");
}

#[test]
fn cloudflare_trap_beacons_and_headers() {
    let beacon = "<script>(function(){window.__CF$cv$params={r:'8f1b',t:'MTcz'};var a=document.createElement('script');\
        a.src='/cdn-cgi/challenge-platform/scripts/jsd/main.js';document.getElementsByTagName('head')[0].appendChild(a);})();</script>";
    let headers = [("server", "cloudflare"), ("cf-ray", "8f1b"), ("set-cookie", "__cf_bm=abc; path=/; HttpOnly")];
    assert_eq!(vendor(200, &headers, &page(beacon)), None);
    let new_beacon = "<script src=\"/cdn-cgi/challenge-platform/h/b/scripts/jsd/13c98df4ef2d/main.js\"></script>";
    assert_eq!(vendor(200, &headers, &page(new_beacon)), None);
    assert_eq!(vendor(200, &headers, "<p>ok</p>"), None, "a short page behind Cloudflare");
    let email = r#"<a href="/cdn-cgi/l/email-protection">email</a>"#;
    assert_eq!(vendor(403, &[], email), None);
    assert_eq!(vendor(403, CF, "<p>We use Cloudflare CDN.</p>"), None);
}

#[test]
fn akamai_access_denied() {
    let plain = "<HTML><HEAD><TITLE>Access Denied</TITLE></HEAD><BODY><H1>Access Denied</H1>\
        Reference #18.2d351ab8.1557333295.a4e16ab</BODY></HTML>";
    assert_eq!(vendor(403, &[("server", "AkamaiGHost")], plain), Some(Vendor::Akamai));
    let encoded = "<H1>Access Denied</H1>Reference&#32;&#35;18&#46;2d351ab8&#46;1557333295&#46;a4e16ab\
        <P>https&#58;&#47;&#47;errors&#46;edgesuite&#46;net&#47;18&#46;2d351ab8</P>";
    assert_eq!(vendor(403, &[], encoded), Some(Vendor::Akamai));
    assert_eq!(vendor(403, &[("server", "AkamaiGHost")], "<H1>Access Denied</H1>"), Some(Vendor::Akamai));
    let challenge =
        r#"<div id="sec-if-cpt-container"><script src="/_sec/cp_challenge/ak-challenge-4-3.htm"></script></div>"#;
    assert_eq!(vendor(428, &[], challenge), Some(Vendor::Akamai));
}

#[test]
fn akamai_trap_sensor_and_cookies() {
    let sensor =
        r#"<script type="text/javascript" src="/akam/13/5b7c5f1e" defer></script><script>bmak.js_post=false;</script>"#;
    let headers =
        [("server", "AkamaiGHost"), ("set-cookie", "_abck=0F3A~0~YAAQ; Path=/"), ("set-cookie", "bm_sz=9C1; Path=/")];
    assert_eq!(vendor(200, &headers, &page(sensor)), None);
    assert_eq!(vendor(200, &[], &page("<p>Order reference #4471 was shipped.</p>")), None);
    assert_eq!(vendor(404, &[], "<p>See reference #12 in the manual.</p>"), None);
}

#[test]
fn perimeterx_block_page() {
    let block = r#"<title>Access to this page has been denied</title><div id="px-captcha"></div>
        <p>Press &amp; Hold to confirm you are a human (and not a bot).</p>
        <script>window._pxAppId = 'PXu6b0qd2S';</script><script src="https://captcha.px-cdn.net/PXu6b0qd2S/captcha.js"></script>"#;
    assert_eq!(vendor(403, &[], block), Some(Vendor::PerimeterX));
    assert_eq!(vendor(403, &[], r#"<div id="px-captcha"></div>"#), Some(Vendor::PerimeterX));
    assert_eq!(vendor(403, &[], "<script>window._pxAppId='PX1';</script>"), Some(Vendor::PerimeterX));
}

#[test]
fn perimeterx_trap_sensor_script() {
    let sensor = "<script>(function(){window._pxAppId='PXu6b0qd2S';var p=document.getElementsByTagName('script')[0],\
        s=document.createElement('script');s.async=1;s.src='//client.perimeterx.net/PXu6b0qd2S/main.min.js';\
        p.parentNode.insertBefore(s,p);}());</script>";
    assert_eq!(vendor(200, &[("set-cookie", "_pxhd=abc; path=/")], &page(sensor)), None);
}

#[test]
fn datadome() {
    assert_eq!(vendor(403, &[("x-datadome", "protected"), ("x-dd-b", "1")], ""), Some(Vendor::DataDome));
    let captcha = "<script>var dd={'rt':'c','cid':'AHrlqAAA','hsh':'2013457','t':'fe','host':'geo.captcha-delivery.com'}</script>\
        <script src=\"https://ct.captcha-delivery.com/c.js\"></script>";
    assert_eq!(vendor(403, &[], captcha), Some(Vendor::DataDome));
}

#[test]
fn datadome_trap_tag_and_header_on_a_page() {
    let tag = r#"<script>window.ddjskey='0B5D';window.ddoptions={};</script><script src="https://js.datadome.co/tags.js" async></script>"#;
    let headers = [("x-datadome", "protected"), ("set-cookie", "datadome=3Cg~; Path=/")];
    assert_eq!(vendor(200, &headers, &page(tag)), None);
}

#[test]
fn imperva() {
    let frame = r#"<iframe id="main-iframe" src="/_Incapsula_Resource?CWUDNSAI=9&xinfo=5-1-0&incident_id=1234-56&edet=15"></iframe>"#;
    assert_eq!(vendor(200, &[], frame), Some(Vendor::Imperva));
    let incident = "<p>Request unsuccessful. Incapsula incident ID: 555000-999</p>";
    assert_eq!(vendor(200, &[], &page(incident)), Some(Vendor::Imperva));
    let distil = "<title>Pardon Our Interruption</title><p>As you were browsing something about your browser made us think you were a bot.</p>";
    assert_eq!(vendor(405, &[], distil), Some(Vendor::Imperva));
}

#[test]
fn imperva_trap_injected_script() {
    let injected = r#"<script type="text/javascript" src="/_Incapsula_Resource?SWJIYLWA=719d34d31c8e3a6e6fffd425f7e032f3&ns=1&cb=1"></script>"#;
    let headers = [("x-iinfo", "5-1234-0 0NNN RT(1 0) q(0 0 0 -1) r(0 0)"), ("x-cdn", "Imperva")];
    assert_eq!(vendor(200, &headers, &page(injected)), None);
    assert_eq!(vendor(200, &headers, &format!("<p>Thanks!</p>{injected}")), None, "a short page behind Imperva");
}

#[test]
fn smaller_vendors_by_header() {
    assert_eq!(vendor(429, &[("x-vercel-mitigated", "challenge")], ""), Some(Vendor::Vercel));
    let aws = detect_with(405, &[("x-amzn-waf-action", "captcha")], "").unwrap();
    assert_eq!((aws.vendor, aws.evidence.as_str()), (Vendor::AwsWaf, "header x-amzn-waf-action: captcha"));
    let odd = detect_with(202, &[("x-amzn-waf-action", "<script>")], "").unwrap();
    assert!(!odd.evidence.contains("<script>"), "a hostile value stays out of the evidence");
    assert_eq!(vendor(403, &[("x-sucuri-block", "BNP002")], ""), Some(Vendor::Sucuri));
    assert_eq!(vendor(429, &[("x-kpsdk-ct", "0abc"), ("x-kpsdk-r", "1-B")], ""), Some(Vendor::Kasada));
    assert_eq!(vendor(200, &[("x-kpsdk-ct", "0abc")], &page("")), None, "Kasada's headers ride normal pages");
    let redirect = [("location", "https://shop.queue-it.net/?c=shop&e=launch&t=https%3A%2F%2Fshop.example")];
    assert_eq!(vendor(302, &redirect, ""), Some(Vendor::Queue));
}

#[test]
fn smaller_vendors_by_body() {
    let sucuri =
        "<title>Sucuri WebSite Firewall - Access Denied</title><h2>Access Denied - Sucuri Website Firewall</h2>";
    assert_eq!(vendor(403, &[], sucuri), Some(Vendor::Sucuri));
    let cloudproxy =
        "<html><script>var s='x',S='...';document.cookie='sucuri_cloudproxy_js='+S;location.reload();</script></html>";
    assert_eq!(vendor(200, &[], cloudproxy), Some(Vendor::Sucuri));
    let kasada = "<script>window.KPSDK={};KPSDK.now=typeof performance!=='undefined'?performance.now.bind(performance):Date.now.bind(Date);\
        KPSDK.start=KPSDK.now();</script><script src=\"/149e9513-01fa-4fb0-aad4-566afd725d1b/2d206a39-8ed7-437e-a3be-862e0f06eea3/ips.js\"></script>";
    assert_eq!(vendor(429, &[], kasada), Some(Vendor::Kasada));
    let aws = "<script>window.gokuProps={\"key\":\"AQIDAHj\",\"iv\":\"CgAH\",\"context\":\"x\"};</script>\
        <script src=\"https://ab12.edge.sdk.awswaf.com/ab12/cd34/challenge.js\"></script>";
    assert_eq!(vendor(202, &[], aws), Some(Vendor::AwsWaf));
    assert_eq!(vendor(429, &[], "<title>Vercel Security Checkpoint</title>"), Some(Vendor::Vercel));
    let queue = "<title>Queue-it</title><h2>You are now in line</h2><p>Your number in line: 1532</p>";
    assert_eq!(vendor(200, &[], queue), Some(Vendor::Queue));
}

#[test]
fn smaller_vendors_trap_scripts() {
    let aws = r#"<script src="https://ab12.edge.sdk.awswaf.com/ab12/cd34/challenge.js" defer></script>"#;
    assert_eq!(vendor(200, &[], &page(aws)), None);
    let queue = r#"<script src="//static.queue-it.net/script/queueclient.min.js"></script>
        <script data-queueit-c="shop" src="//static.queue-it.net/script/queueconfigloader.min.js"></script>"#;
    assert_eq!(vendor(200, &[], &page(queue)), None);
    let blog = "<h1>Sucuri Website Firewall review</h1>";
    assert_eq!(vendor(200, &[], &page(blog)), None);
}

#[test]
fn captcha_walls() {
    let google = r#"<title>https://www.google.com/search?q=x</title><div id="recaptcha" class="g-recaptcha" data-sitekey="6LfwuyUT"></div>
        <p>Our systems have detected unusual traffic from your computer network.</p>"#;
    let wall = detect_with(429, &[], google).unwrap();
    assert_eq!(wall.vendor, Vendor::Captcha);
    assert_eq!(wall.evidence, "a CAPTCHA (g-recaptcha) asking \"unusual traffic\"");
    let hcaptcha = r#"<h1>Verify you are human</h1><div class="h-captcha" data-sitekey="10000000"></div>"#;
    assert_eq!(vendor(200, &[], hcaptcha), Some(Vendor::Captcha));
    let turnstile = r#"<p>Please verify you're human</p><div class="cf-turnstile" data-sitekey="0x4AAA"></div>"#;
    assert_eq!(vendor(403, &[("server", "nginx")], turnstile), Some(Vendor::Captcha));
}

#[test]
fn captcha_traps() {
    let login = r#"<form action="/login" method="post"><input name="email"><input type="password" name="password">
        <div class="g-recaptcha" data-sitekey="6Lc"></div><p>Please confirm you are not a robot.</p><button>Sign in</button></form>"#;
    assert_eq!(vendor(200, &[], login), None, "a login form with reCAPTCHA");
    assert_eq!(vendor(200, &[], &page(r#"<div class="g-recaptcha"></div><p>Are you a robot?</p>"#)), None);
    let contact = r#"<p>Contact us</p><div class="h-captcha" data-sitekey="1"></div>"#;
    assert_eq!(vendor(200, &[], contact), None, "a widget with no words asking for a human");
    let article = page("<p>Bots meet g-recaptcha and h-captcha widgets that ask them to verify you are human.</p>");
    assert_eq!(vendor(200, &[], &article), None);
}

#[test]
fn ordinary_answers() {
    assert_eq!(vendor(200, &[("content-type", "application/json")], r#"{"price":12.5,"stock":3}"#), None);
    assert_eq!(vendor(403, &[], r#"{"error":"Forbidden","message":"Invalid API key"}"#), None);
    assert_eq!(vendor(404, &[], "<h1>Not Found</h1>"), None);
    assert_eq!(vendor(503, &[], "<h1>Service Temporarily Unavailable</h1><p>Maintenance.</p>"), None);
    assert_eq!(vendor(200, &[], ""), None);
}

#[test]
fn markers_past_scan_bytes_are_not_read() {
    let mut body = "a".repeat(SCAN_BYTES);
    body.push_str("<script>window._cf_chl_opt={};</script>");
    assert_eq!(vendor(200, &[], &body), None);
    assert_eq!(vendor(200, &[], &body[SCAN_BYTES - 100..]), Some(Vendor::Cloudflare));
}

#[test]
fn markers_ignore_ascii_case() {
    assert_eq!(vendor(200, &[], "<SCRIPT>WINDOW._CF_CHL_OPT={}</SCRIPT>"), Some(Vendor::Cloudflare));
    assert_eq!(vendor(403, &[("CF-Mitigated", "challenge")], ""), Some(Vendor::Cloudflare));
}

#[test]
fn little_text_counts_only_what_is_shown() {
    use super::markers::little_text;
    let hidden = format!(
        "<script>{}</script><style>{}</style><!-- {} --><p>Hi</p>",
        "x".repeat(5000),
        "y".repeat(5000),
        "z".repeat(5000)
    );
    assert!(little_text(hidden.as_bytes(), LITTLE_TEXT));
    assert!(!little_text(page("").as_bytes(), LITTLE_TEXT));
    assert!(little_text(b"<scripts>", 0) && little_text(b"<script", 0) && little_text(b"<", 0));
    assert!(!little_text("é".repeat(LITTLE_TEXT).as_bytes(), LITTLE_TEXT));
}

#[test]
fn hostile_bodies_do_not_panic() {
    for body in ["<", "<!--", "<script", "</", "Reference #", "Reference #1", "cf-error-code\">", "cf-error-code\">10"]
    {
        assert_eq!(detect_with(403, &[("server", "cloudflare")], body), None, "{body}");
    }
}

#[test]
fn names_are_distinct() {
    let mut names: Vec<_> = Vendor::ALL.iter().map(|v| v.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), Vendor::ALL.len());
    assert!(Vendor::ALL.iter().all(|v| !v.label().is_empty()));
}

#[test]
fn pages_full_of_text_are_read_for_the_markers_that_count_anywhere() {
    let akamai = page("<h1>Access Denied</h1><p>Reference #18.2d351ab8.1733547600.a4e16ab</p>");
    assert_eq!(vendor(200, &[], &akamai), Some(Vendor::Akamai));
    let px = page(r#"<div id="px-captcha"></div><p>Press &amp; Hold to confirm</p>"#);
    assert_eq!(vendor(200, &[], &px), Some(Vendor::PerimeterX));
    let frame = page(r#"<iframe src="/_Incapsula_Resource?CWUDNSAI=9&incident_id=1-2"></iframe>"#);
    assert_eq!(vendor(200, &[], &frame), Some(Vendor::Imperva));
    let orchestrate = page(r#"<script src="/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1"></script>"#);
    assert_eq!(vendor(200, &[], &orchestrate), Some(Vendor::Cloudflare));
    let quoted = page("<p>Akamai pages end with a Reference # and a number.</p>");
    assert_eq!(vendor(200, &[], &quoted), None, "a trigger alone is not a wall");
}
