use std::time::Duration;

use serde_json::{Value, json};

use super::*;

/// A shop's product list, as its API returns it.
fn shop() -> Value {
    json!({
        "page": 1,
        "total": 3,
        "currency": "EUR",
        "items": [
            {"sku": "A1", "name": "Kettle", "price": 39.9, "stock": 4, "tags": ["kitchen", "sale"]},
            {"sku": "B2", "name": "Toaster", "price": 24.5, "stock": 0, "tags": ["kitchen"]},
            {"sku": "C3", "name": "Lamp", "price": 61, "stock": 12, "tags": []}
        ],
        "links": {"next": null, "self": "/api/products?page=1"}
    })
}

/// The default limits without the wall-clock safety net: what a test asserts must not depend
/// on how fast or loaded the machine is, so only steps, stack and sizes bound these runs.
fn limits() -> JqLimits {
    JqLimits { time: Duration::from_secs(3600), ..JqLimits::default() }
}

fn first(query: &JsonQuery) -> Option<Value> {
    query.first(&shop(), &limits()).expect("runs")
}

fn jq(program: &str) -> Option<Value> {
    first(&JsonQuery::jq(program).expect("compiles"))
}

fn jq_err(program: &str) -> String {
    jq_err_within(program, limits())
}

fn jq_err_within(program: &str, limits: JqLimits) -> String {
    let query = JsonQuery::jq(program).expect("compiles");
    let result = query.first(&shop(), &limits);
    let shown: String = program.chars().take(60).collect();
    eprintln!("{shown}: {:?}", result.as_ref().err());
    result.expect_err("is stopped")
}

#[test]
fn json_pointer_reads_one_value() {
    assert_eq!(first(&JsonQuery::pointer("/items/0/price").expect("valid")), Some(json!(39.9)));
    assert_eq!(first(&JsonQuery::pointer("/links/self").expect("valid")), Some(json!("/api/products?page=1")));
    assert_eq!(first(&JsonQuery::pointer("/items/7/price").expect("valid")), None);
    assert_eq!(first(&JsonQuery::pointer("").expect("valid")), Some(shop()));
    let escaped = JsonQuery::pointer("/a~1b/c~0d").expect("valid");
    assert_eq!(escaped.first(&json!({"a/b": {"c~d": 5}}), &limits()), Ok(Some(json!(5))));
}

#[test]
fn json_pointer_is_checked() {
    let e = JsonQuery::pointer("items/0").expect_err("no leading slash");
    assert_eq!(e.column, Some(1));
    let e = JsonQuery::pointer("/a~2b").expect_err("bad escape");
    assert_eq!(e.column, Some(3));
    assert!(e.message.contains('~'), "{e:?}");
    assert!(JsonQuery::pointer("/a~").is_err());
}

#[test]
fn jsonpath_selects_nodes() {
    let by_sku = JsonQuery::jsonpath("$.items[?@.sku=='A1'].price").expect("valid");
    assert_eq!(first(&by_sku), Some(json!(39.9)));
    let any_price = JsonQuery::jsonpath("$..price").expect("valid");
    assert_eq!(first(&any_price), Some(json!(39.9)));
    let in_stock = JsonQuery::jsonpath("$.items[?@.stock > 5].name").expect("valid");
    assert_eq!(first(&in_stock), Some(json!("Lamp")));
    let none = JsonQuery::jsonpath("$.items[?@.sku=='Z9'].price").expect("valid");
    assert_eq!(first(&none), None);
    let relative_in_filter = JsonQuery::jsonpath("$..[?@..kitchen]").expect("a relative search in a filter is fine");
    assert_eq!(first(&relative_in_filter), None);
    JsonQuery::jsonpath("$.items[?@.price < $.total]").expect("a singular absolute query in a filter is fine");
}

#[test]
fn jsonpath_errors_say_where() {
    let e = JsonQuery::jsonpath("$.items[?@.price >]").expect_err("invalid");
    assert!(e.column.is_some(), "{e:?}");
    assert!(e.message.starts_with("not a JSONPath query"), "{e:?}");
    let e = JsonQuery::jsonpath("items[0]").expect_err("no root");
    assert_eq!(e.column, Some(1), "{e:?}");
}

#[test]
fn jsonpath_refuses_queries_that_cost_more_than_the_page() {
    let e = JsonQuery::jsonpath("$..[?$..price]").expect_err("whole-document search per node");
    assert_eq!(e.column, Some(7), "{e:?}");
    JsonQuery::jsonpath("$..[?@..[?@..price]]").expect_err("nested descendant searches");
    JsonQuery::jsonpath(&format!("$.a{}", "[?(".repeat(40))).expect_err("too deep");
    JsonQuery::jsonpath(&"$.a".repeat(2000)).expect_err("too long");
}

#[test]
fn jq_reads_values() {
    assert_eq!(jq(".items | map(.price) | min"), Some(json!(24.5)));
    assert_eq!(jq(".items[] | select(.stock > 0) | .name"), Some(json!("Kettle")));
    assert_eq!(jq(".items[] | select(.sku == \"Z9\")"), None);
    assert_eq!(jq("[.items[] | select(.stock > 0) | .sku]"), Some(json!(["A1", "C3"])));
    assert_eq!(jq(".items | length"), Some(json!(3)));
    assert_eq!(jq("[.items[].price] | add"), Some(json!(125.4)));
    assert_eq!(jq(".total * 2 + 1"), Some(json!(7)));
    assert_eq!(jq("\"\\(.currency) \\(.items[0].price)\""), Some(json!("EUR 39.9")));
    assert_eq!(jq(".links.next // \"none\""), Some(json!("none")));
}

/// The rewrite must not change what jq programs mean.
#[test]
fn jq_standard_library_works_through_the_rewrite() {
    let cases: &[(&str, Value)] = &[
        (".items | sort_by(.price) | map(.sku)", json!(["B2", "A1", "C3"])),
        (".items | group_by(.stock > 0) | map(length)", json!([1, 2])),
        (".items | map(.tags[]) | unique", json!(["kitchen", "sale"])),
        (".items | min_by(.stock) | .name", json!("Toaster")),
        (".items | max_by(.price) | .sku", json!("C3")),
        (".links | keys", json!(["next", "self"])),
        (".links | to_entries | map(.key)", json!(["next", "self"])),
        (".links | with_entries(.value |= tostring) | .next", json!("null")),
        (".items[0] | has(\"sku\")", json!(true)),
        (".items[0].tags | contains([\"sale\"])", json!(true)),
        (".items[0].tags | index(\"sale\")", json!(1)),
        (".items[0] | .price += 1 | .price", json!(40.9)),
        (".items[0] | .stock -= 1 | .stock", json!(3)),
        (".items[0] | .name |= ascii_downcase | .name", json!("kettle")),
        (".items[0] | .extra = .sku | .extra", json!("A1")),
        (".items[1] | .note //= \"n/a\" | .note", json!("n/a")),
        (".items[0] | del(.tags, .stock) | keys", json!(["name", "price", "sku"])),
        ("[paths(type == \"number\")] | length", json!(8)),
        ("[.. | numbers] | length", json!(8)),
        ("walk(if type == \"number\" then 0 else . end) | .items[2].price", json!(0)),
        (".items | map(.name) | join(\", \")", json!("Kettle, Toaster, Lamp")),
        (".items[0].name | test(\"^K\")", json!(true)),
        (".links.self | split(\"?\") | .[1]", json!("page=1")),
        ("\"12.5\" | tonumber", json!(12.5)),
        (".items[0] | tojson | fromjson | .sku", json!("A1")),
        ("@json \"v=\\(.page)\"", json!("v=1")),
        ("@base64 \"\\(.currency)\"", json!("RVVS")),
        ("first(.items[] | .sku)", json!("A1")),
        ("[limit(2; .items[] | .sku)]", json!(["A1", "B2"])),
        ("[range(3)]", json!([0, 1, 2])),
        ("[range(0; 10; 3)]", json!([0, 3, 6, 9])),
        ("reduce .items[] as $i (0; . + $i.stock)", json!(16)),
        ("[foreach .items[] as $i (0; . + 1)]", json!([1, 2, 3])),
        ("try error({\"code\": 7}) catch .code", json!(7)),
        ("try error(\"boom\") catch .", json!("boom")),
        ("[.items[] | .price? ]", json!([39.9, 24.5, 61])),
        ("[.items[] | (.name | tonumber)?]", json!([])),
        ("try (\"a\" - 1) catch (type)", json!("string")),
        ("path(.items[0].sku)", json!(["items", 0, "sku"])),
        ("[path(.items[]? | select(.stock == 0))]", json!([["items", 1]])),
        ("del(.items[] | select(.stock == 0)) | .items | length", json!(2)),
        ("getpath([\"items\", 2, \"sku\"])", json!("C3")),
        ("setpath([\"links\", \"x\"]; 1) | .links.x", json!(1)),
        ("{sku: .items[0].sku, n: (.items | length)}", json!({"sku": "A1", "n": 3})),
        (".items[0] | {sku, price}", json!({"sku": "A1", "price": 39.9})),
        (". as {currency: $c} | {$c}", json!({"c": "EUR"})),
        (".items | map({(.sku): .stock}) | add", json!({"A1": 4, "B2": 0, "C3": 12})),
        ("[.items[] | .stock] | sort | reverse", json!([12, 4, 0])),
        (".items[0].tags - [\"sale\"]", json!(["kitchen"])),
        ("{a: {b: 1}} * {a: {c: 2}}", json!({"a": {"b": 1, "c": 2}})),
        ("\"ab\" * 3", json!("ababab")),
        ("\"a,b\" / \",\"", json!(["a", "b"])),
        ("7 % 4", json!(3)),
        ("[1, [2]] | flatten", json!([1, 2])),
        ("[3, 1] | debug | sort", json!([1, 3])),
        ("[.items[] | .stock | tostring]", json!(["4", "0", "12"])),
        ("def twice(f): f | f; 3 | twice(. * 2)", json!(12)),
        ("[.items[] | select(.tags | any(. == \"sale\"))] | length", json!(1)),
        ("[splits(\", *\")]", json!(null)),
        ("100000000000 * 100000000000", json!(1e22)),
        ("[range(5)] | .[1:3]", json!([1, 2])),
        ("now | type", json!("number")),
        ("if .page == 1 then \"first\" elif .page == 2 then \"second\" else \"other\" end", json!("first")),
        ("label $out | .items[] | if .stock == 0 then ., break $out else empty end | .sku", json!("B2")),
    ];
    for (program, expected) in cases {
        let query = JsonQuery::jq(program).unwrap_or_else(|e| panic!("{program}: {e:?}"));
        let got = query.first(&shop(), &limits());
        if *program == "[splits(\", *\")]" {
            assert!(got.is_err(), "splits on an object fails");
            continue;
        }
        assert_eq!(got, Ok(Some(expected.clone())), "{program}");
    }
}

#[test]
fn jq_syntax_errors_say_where() {
    let e = JsonQuery::jq(".items | map(.price").expect_err("unclosed");
    assert!(e.message.starts_with("jq syntax error"), "{e:?}");
    assert!(e.column.is_some(), "{e:?}");
    let e = JsonQuery::jq(".items | ] ").expect_err("stray bracket");
    assert_eq!(e.column, Some(10), "{e:?}");
    let e = JsonQuery::jq(".a |").expect_err("missing term");
    assert!(e.message.contains("expected"), "{e:?}");
}

#[test]
fn jq_unknown_names_are_refused_with_their_column() {
    let e = JsonQuery::jq(".items | frobnicate").expect_err("unknown");
    assert_eq!(e.message, "unknown jq function frobnicate/0");
    assert_eq!(e.column, Some(10));
    let e = JsonQuery::jq("map(sqr(.))").expect_err("unknown");
    assert_eq!(e.column, Some(5), "{e:?}");
    for outside in ["input", "[inputs]", "$ENV.HOME", "env.HOME", "input_filename", "localtime"] {
        let e = JsonQuery::jq(outside).expect_err(outside);
        assert!(e.message.contains("only reads the page"), "{outside}: {e:?}");
    }
    JsonQuery::jq("import \"a\" as a; .").expect_err("modules");
    JsonQuery::jq("include \"a\"; .").expect_err("modules");
}

#[test]
fn jq_reads_only_the_first_output() {
    assert_eq!(jq("repeat(.) | .page"), Some(json!(1)));
    assert_eq!(jq("range(1e18)"), Some(json!(0)));
}

#[test]
fn jq_effects_are_neutralised() {
    assert_eq!(jq("1 | debug | stderr | debug(\"msg\")"), Some(json!(1)));
    assert!(jq_err("halt").contains("halt"));
    assert!(jq_err("\"bye\" | halt_error").contains("halt"));
    assert!(jq_err("error(\"boom\")").ends_with("boom"));
}

#[test]
fn jq_outputs_are_bounded() {
    let query = JsonQuery::jq("[range(1000)]").expect("compiles");
    let small = JqLimits { max_output_bytes: 100, ..limits() };
    assert!(query.first(&shop(), &small).is_err());
    assert!(query.first(&shop(), &limits()).is_ok());
}

#[test]
fn runaway_jq_programs_are_stopped() {
    let doubled = format!("def d: . + .; \"x\" {}", "| d ".repeat(30));
    let programs = [
        "def f: f; f",
        "[repeat(.)]",
        "last(repeat(.))",
        "[range(1e9)]",
        "[limit(100000000; repeat(\"x\" * 1000))]",
        "reduce range(1e9) as $i (0; .+1)",
        "[foreach range(1e9) as $i (0; .+1)] | length",
        "last(range(1e18))",
        &doubled,
        "def d: [., .] + [., .]; [1] | d|d|d|d|d|d|d|d|d|d|d|d|d|d|d|d|d|d|d|d|d|d|d|d",
        "def f: . as $x | [$x, $x] | f; 0 | f",
        "\"x\" * 1000000000000",
        "\"x\" * 100000000000000000000000",
        "def sq: . * .; 10 | sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq|sq",
        "def f: [.] | f; 0 | f",
        "reduce range(100000) as $i (0; [.])",
        "reduce range(100000) as $i (0; {a: .})",
        "last(limit(100000; recurse([.])))",
        "def f: try ([\"x\" * 100000000] | f) catch f; f",
        "def f: try error(.) catch ([.] | f); 0 | f",
        "\"x\" * 10000000 | explode | length",
        "\"x\" * 10000000 | [indices(\"x\")] | length",
        "(\"x\" * 10000000) / \"\" | length",
        "\"x\" * 10000000 | [match(\"\"; \"g\")] | length",
        "\"x\" * 1000000 | test(\"a{1000}\")",
        "[range(10000)] as $a | $a | contains($a)",
        "[range(2000000)] | sort | length",
    ];
    for program in programs {
        jq_err(program);
    }
}

/// Values shared many times over (tiny in memory, huge as trees) are refused where they would
/// be walked as trees.
#[test]
fn shared_values_are_not_walked_as_trees() {
    let dag = format!("0 {}", "| [., .] ".repeat(60));
    for sink in [
        "tostring",
        "tojson",
        ". == [1]",
        ". < .",
        "[..] | length",
        "[paths] | length",
        "sort",
        "unique",
        "{(tostring): 1}",
        "contains([0])",
        "walk(.)",
        "flatten | length",
        "\"\\(.)\"",
        "try (. - 1) catch length",
    ] {
        let program = format!("{dag} | {sink}");
        let query = JsonQuery::jq(&program).expect("compiles");
        let result = query.first(&shop(), &limits());
        assert!(result.is_err() || sink.starts_with("try"), "{sink}: {result:?}");
    }
    // the output itself is bounded
    jq_err(&dag);
}

#[test]
fn deep_recursion_does_not_crash_the_process() {
    // with steps enough to reach the stack bound
    let patient = JqLimits { max_steps: u64::MAX, ..limits() };
    for program in ["def f: [f]; f", "def f: 1 + f; f", "def f: {a: f}; f", "def f: (f | .) , 1; f"] {
        let e = jq_err_within(program, patient);
        assert!(e.contains("recursed too deeply"), "{program}: {e}");
    }
    jq_err("def f: [f]; f");
    assert_eq!(jq(&format!("[{}]", "1 + ".repeat(3000) + "1")), Some(json!([3001])));
    // and the next run is fine
    assert_eq!(jq(".page"), Some(json!(1)));
}

#[test]
fn deep_input_and_programs_are_refused() {
    let mut deep = json!(1);
    for _ in 0..300 {
        deep = json!([deep]);
    }
    let query = JsonQuery::jq(".").expect("compiles");
    assert!(query.first(&deep, &limits()).is_err());
    JsonQuery::jq(&format!("{}1{}", "(".repeat(300), ")".repeat(300))).expect_err("nested too deeply");
    JsonQuery::jq(&format!("\"{}\"", "\\(".repeat(300))).expect_err("nested too deeply");
    JsonQuery::jq(&".a".repeat(10_000)).expect_err("too long");
    // long but flat programs compile and run
    JsonQuery::jq(&format!("{}1", "1 + ".repeat(3000))).expect("compiles");
    let pipes = JsonQuery::jq(&format!("{}.page", ". | ".repeat(4000))).expect("compiles");
    assert_eq!(pipes.first(&shop(), &limits()), Ok(Some(json!(1))));
    let nested = format!("{}.page{}", "[".repeat(250), "]".repeat(250));
    let nested = JsonQuery::jq(&nested).expect("compiles");
    assert!(nested.first(&shop(), &limits()).is_ok());
}

#[test]
fn steps_are_counted_the_same_on_any_machine() {
    let within = |steps: u64, program: &str| {
        let query = JsonQuery::jq(program).expect("compiles");
        query.first(&shop(), &JqLimits { max_steps: steps, ..limits() })
    };
    // The same program takes the same steps each time: the bound falls between the same two
    // lengths, however fast the machine.
    assert_eq!(within(100_000, "[range(1000)] | length"), Ok(Some(json!(1000))));
    let e = within(100_000, "[range(200000)] | length").expect_err("stopped");
    assert_eq!(e, "the jq program took more than 100000 steps");
    // The default bound stops a runaway loop by counting, not by the clock.
    let e = within(JqLimits::STEPS, "reduce range(1e9) as $i (0; .+1)").expect_err("stopped");
    assert!(e.contains("steps"), "{e}");
}

/// The wall-clock safety net still stops a run whose steps are not bounded; the assertion is
/// that it stops and says why, not how fast.
#[test]
fn a_time_limit_is_a_time_limit() {
    let query = JsonQuery::jq("reduce range(1e9) as $i (0; .+1)").expect("compiles");
    let net = JqLimits { max_steps: u64::MAX, time: Duration::from_millis(20), ..limits() };
    let e = query.first(&shop(), &net).expect_err("stopped");
    assert!(e.contains("ran out of time (20 ms)"), "{e}");
}

#[test]
fn queries_are_send_sync_and_cheap_to_clone() {
    fn send_sync<T: Send + Sync + Clone>() {}
    send_sync::<JsonQuery>();
    let query = JsonQuery::jq(".items[0].sku").expect("compiles");
    let copy = query.clone();
    let found = std::thread::spawn(move || copy.first(&shop(), &limits())).join().expect("joins");
    assert_eq!(found, Ok(Some(json!("A1"))));
    assert!(format!("{query:?}").contains(".items[0].sku"));
}
