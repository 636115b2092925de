use driftwatch_core::{Compare, Engine, Region, ScreenshotMode, Step, Wait, WatchOptions};
use driftwatch_store::Watch;
use driftwatch_validate::FieldError;

use super::fields::{WatchForm, form_field};
use crate::ui::steps::parse_regions;

#[test]
fn a_stored_watch_reads_back_unchanged_through_the_form() {
    let mut options = WatchOptions::default();
    options.fetch.engine = Engine::Auto;
    options.fetch.wait = Some(Wait::Text("#app .ready".into()));
    options.fetch.screenshot = ScreenshotMode::FullPage;
    options.fetch.steps = vec![
        Step::Click { selector: "button.accept".into() },
        Step::Type { selector: "form input[name=q]".into(), text: " padded \"text\" ".into() },
        Step::Select { selector: "#size".into(), value: String::new() },
        Step::Press { key: "Enter".into() },
        Step::Scroll { selector: Some("footer a".into()) },
        Step::WaitFor { selector: Some("\"odd".into()), ms: None },
        Step::WaitFor { selector: None, ms: Some(250) },
    ];
    options.noise.compare = Compare::TextOrVisual;
    options.noise.min_visual_change_percent = Some(2.5);
    options.noise.ignore_regions = vec![Region { x: 0, y: 0, width: 1280, height: 90 }];
    for wait in [Some(Wait::Delay(1500)), Some(Wait::Text("network_idle".into())), None] {
        options.fetch.wait = wait;
        let mut watch = Watch::new("acc_1", "https://example.com/", chrono::NaiveDateTime::default());
        watch.options = serde_json::to_string(&options).expect("json");
        let mut errors = Vec::new();
        assert_eq!(WatchForm::of(&watch).options(&mut errors), options);
        assert!(errors.is_empty(), "{errors:?}");
    }
    let mut errors = Vec::new();
    assert_eq!(WatchForm::blank().options(&mut errors), WatchOptions::default());
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn validation_errors_of_a_step_or_region_name_its_line() {
    let form =
        WatchForm { steps: "click #a\n\nclick a:::b".into(), ignore_regions: "\n1,1,0,4".into(), ..WatchForm::blank() };
    let step = FieldError::new("options.fetch.steps[1].selector", "not a selector");
    assert_eq!((form_field(&step.field), form.message(step)), ("steps", "line 3: not a selector".to_owned()));
    let region = FieldError::new("options.noise.ignore_regions[0]", "width and height must be above 0");
    assert_eq!(form.message(region), "line 2: width and height must be above 0");
    assert_eq!(parse_regions("1,2,3").unwrap_err(), "line 1: write x,y,width,height in whole pixels, like 0,0,1280,90");
    assert_eq!(form_field("options.fetch.engine"), "engine");
}

/// A stored watch with these values and conditions, read into the form.
fn form_of(values: serde_json::Value, conditions: serde_json::Value) -> (WatchForm, WatchOptions) {
    let options: WatchOptions =
        serde_json::from_value(serde_json::json!({"values": values, "conditions": conditions})).expect("options");
    let mut watch = Watch::new("acc_1", "https://example.com/", chrono::NaiveDateTime::default());
    watch.options = serde_json::to_string(&options).expect("json");
    (WatchForm::of(&watch), options)
}

#[test]
fn price_presets_and_structured_data_read_back_as_they_were_chosen() {
    let price = serde_json::json!({"name": "price", "type": "money", "structured": "price"});
    let stock = serde_json::json!({"name": "stock", "type": "availability", "structured": "availability"});
    let shown = serde_json::json!({"name": "shown", "type": "money", "selector": "#price", "attribute": "content"});
    let cases = [
        (serde_json::json!({"rules": [{"subject": "price", "op": "<", "operand": 50}]}), "price_below", "50", ""),
        (serde_json::json!({"rules": [{"subject": "price", "op": "<", "operand": 49.9}]}), "price_below", "49.9", ""),
        (
            serde_json::json!({"rules": [{"subject": "price", "op": "changed_by_percent", "operand": -10}]}),
            "price_drop",
            "",
            "10",
        ),
        (
            serde_json::json!({"rules": [{"subject": "price", "op": "changed_by_percent", "operand": -12.5}]}),
            "price_drop",
            "",
            "12.5",
        ),
        (
            serde_json::json!({"rules": [{"subject": "stock", "op": "==", "operand": "in_stock"}]}),
            "back_in_stock",
            "",
            "",
        ),
    ];
    for (conditions, preset, below, drop) in cases {
        let (form, options) = form_of(serde_json::json!([price, stock, shown]), conditions);
        assert_eq!(form.structured_data.as_deref(), Some("on"));
        assert_eq!(
            (form.alert_when.as_str(), form.price_below.as_str(), form.price_drop.as_str()),
            (preset, below, drop)
        );
        assert_eq!(form.conditions_json, "");
        assert_eq!(
            form.values_json,
            "[\n  {\"name\": \"shown\", \"type\": \"money\", \"selector\": \"#price\", \"attribute\": \"content\"}\n]"
        );
        let mut errors = Vec::new();
        assert_eq!(form.options(&mut errors), options, "{preset}");
        assert!(errors.is_empty(), "{errors:?}");
    }
}

#[test]
fn other_settings_show_as_json_and_read_back_unchanged() {
    let cases = [
        // Not the preset's shape: two rules, `any`, a rise, another order of the values.
        (
            serde_json::json!([{"name": "stock", "type": "availability", "structured": "availability"},
                               {"name": "price", "type": "money", "structured": "price"}]),
            serde_json::json!({"match": "any", "rules": [{"subject": "price", "op": "<", "operand": 50},
                                                          {"subject": "stock", "op": "==", "operand": "in_stock"}]}),
        ),
        (
            serde_json::json!([{"name": "price", "type": "money", "structured": "price"}]),
            serde_json::json!({"rules": [{"subject": "price", "op": "changed_by_percent", "operand": 10}]}),
        ),
        (
            serde_json::json!([{"name": "price", "type": "money", "structured": "price", "currency": "EUR"},
                               {"name": "stock", "type": "availability", "structured": "availability"}]),
            serde_json::json!({"rules": [{"subject": "price", "op": "<", "operand": -5}]}),
        ),
        (serde_json::json!([]), serde_json::json!(null)),
    ];
    for (values, conditions) in cases {
        let (form, options) = form_of(values, conditions.clone());
        assert_eq!(form.structured_data, None);
        assert_eq!(form.alert_when, "any");
        assert_eq!(form.conditions_json.is_empty(), conditions.is_null());
        let mut errors = Vec::new();
        assert_eq!(form.options(&mut errors), options, "{}\n{}", form.values_json, form.conditions_json);
        assert!(errors.is_empty(), "{errors:?}");
    }
}

#[test]
fn the_checkbox_and_a_preset_become_values_and_conditions() {
    let form = WatchForm {
        structured_data: Some("on".into()),
        alert_when: "price_drop".into(),
        price_drop: " -15 % ".into(),
        values_json: r##"[{"name": "price", "type": "number", "selector": "#p"}]"##.into(),
        conditions_json: "ignored while a preset is chosen".into(),
        ..WatchForm::blank()
    };
    let mut errors = Vec::new();
    let options = form.options(&mut errors);
    assert!(errors.is_empty(), "{errors:?}");
    let names: Vec<&str> = options.values.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["stock", "price"], "the page's own price is kept, the structured one not added");
    let conditions = serde_json::to_value(options.conditions).expect("json");
    assert_eq!(
        conditions,
        serde_json::json!({"match": "all", "rules": [{"subject": "price", "op": "changed_by_percent", "operand": -15}]})
    );
    let form = WatchForm { alert_when: "price_below".into(), price_below: "49,90".into(), ..WatchForm::blank() };
    let mut errors = Vec::new();
    assert_eq!(form.options(&mut errors).conditions, None);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].field, "alert_when");
    assert!(errors[0].message.starts_with("needs a value named price"), "{}", errors[0].message);
    let form = WatchForm { structured_data: Some("on".into()), ..form };
    let mut errors = Vec::new();
    let operand = form.options(&mut errors).conditions.map(|c| c.rules[0].operand.clone());
    assert_eq!(operand, Some(serde_json::json!(49.9)), "a decimal comma reads: {errors:?}");
    for (below, drop) in [("", "10"), ("0", "10"), ("cheap", "10")] {
        let form = WatchForm { price_below: below.into(), price_drop: drop.into(), ..form.clone() };
        let mut errors = Vec::new();
        form.options(&mut errors);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(form_field(&errors[0].field), "price_below");
    }
    for drop in ["", "101", "0"] {
        let form = WatchForm { alert_when: "price_drop".into(), price_drop: drop.into(), ..form.clone() };
        let mut errors = Vec::new();
        form.options(&mut errors);
        assert_eq!(form_field(&errors[0].field), "price_drop", "{drop}");
    }
}

#[test]
fn json_mistakes_say_where_and_validation_errors_name_the_value_or_rule() {
    let form = WatchForm {
        structured_data: Some("on".into()),
        values_json: "[\n  {\"name\": \"shown\" \"type\": \"money\"}\n]".into(),
        conditions_json: "{\"rules\": [{\"subject\": \"shown\", \"op\": \"<\", \"operand\": 5}]}".into(),
        ..WatchForm::blank()
    };
    let mut errors = Vec::new();
    let options = form.options(&mut errors);
    assert_eq!(errors.len(), 1, "the conditions are not checked against values that did not read: {errors:?}");
    assert_eq!(form_field(&errors[0].field), "values_json");
    assert_eq!(errors[0].message, "JSON syntax error at line 2, column 20: expected `,` or `}`");
    assert_eq!(options.conditions, None);

    let form = WatchForm { values_json: r##"{"name": "shown"}"##.into(), ..WatchForm::blank() };
    let mut errors = Vec::new();
    form.options(&mut errors);
    assert_eq!(errors[0].message, "write a list of values, starting with [");
    let form = WatchForm { values_json: r##"[{"name": "x", "selecter": "#p"}]"##.into(), ..WatchForm::blank() };
    let mut errors = Vec::new();
    form.options(&mut errors);
    assert!(errors[0].message.starts_with("at line 1, column 25: unknown field `selecter`"), "{}", errors[0].message);
    let form = WatchForm { conditions_json: r##"{"rules": [{"subject": "x""##.into(), ..WatchForm::blank() };
    let mut errors = Vec::new();
    form.options(&mut errors);
    assert_eq!(form_field(&errors[0].field), "conditions_json");
    assert!(errors[0].message.starts_with("JSON ends too early at line 1"), "{}", errors[0].message);

    // Validation errors name the value (as numbered in the field) or the rule.
    let form = WatchForm {
        structured_data: Some("on".into()),
        values_json: r##"[{"name": "shown", "type": "money", "selector": "#p", "regex": "([0-9"}]"##.into(),
        conditions_json: r##"{"rules": [{"subject": "shown", "op": "<", "operand": 5}, {"subject": "shown", "op": ">", "operand": "x"}]}"##.into(),
        ..WatchForm::blank()
    };
    let regex = FieldError::new("options.values[2].regex", "not a regex: unclosed group");
    assert_eq!(
        (form.field_for(&regex.field), form.message(regex)),
        ("values_json", "value 1 (shown): regex: not a regex: unclosed group".to_owned())
    );
    let operand = FieldError::new("options.conditions.rules[1].operand", "`>` needs a number");
    assert_eq!(
        (form.field_for(&operand.field), form.message(operand)),
        ("conditions_json", "rule 2 (shown >): operand: `>` needs a number".to_owned())
    );
    assert_eq!(form.message(FieldError::new("options.values", "at most 10 values")), "at most 10 values");
    let parse = FieldError::new(
        "options.values[2].regex",
        "not a regex: regex parse error:\n    ([0-9\n     ^\nerror: unclosed character class",
    );
    assert_eq!(form.message(parse), "value 1 (shown): regex: not a regex: unclosed character class (at character 2)");
    // With a preset, errors of the conditions stand beside it.
    let form = WatchForm { alert_when: "back_in_stock".into(), ..form };
    let op = FieldError::new("options.conditions.rules[0].op", "`==` does not apply");
    assert_eq!((form.field_for(&op.field), form.message(op)), ("alert_when", "`==` does not apply".to_owned()));
}

#[test]
fn backticks_of_a_caveat_become_code() {
    assert_eq!(
        super::code_spans("The value `shown` was never read"),
        [(false, "The value ".to_owned()), (true, "shown".to_owned()), (false, " was never read".to_owned())]
    );
    assert_eq!(super::code_spans("odd ` one"), [(false, "odd ` one".to_owned())]);
}

/// `alert_on` is the "Also send change.detected" box: read back from a stored watch, whether its
/// conditions are a preset or JSON, and kept on a save.
#[test]
fn alert_on_reads_back_as_its_checkbox() {
    let price = serde_json::json!({"name": "price", "type": "money", "structured": "price"});
    let cases = [
        serde_json::json!({"rules": [{"subject": "price", "op": "<", "operand": 50}], "alert_on": "conditions_and_changes"}),
        serde_json::json!({"match": "any", "rules": [{"subject": "price", "op": ">", "operand": 5}], "alert_on": "conditions_and_changes"}),
        serde_json::json!({"rules": [{"subject": "price", "op": "<", "operand": 50}]}),
    ];
    for conditions in cases {
        let (form, options) = form_of(serde_json::json!([price]), conditions.clone());
        let both = conditions.get("alert_on").is_some();
        assert_eq!(form.alert_on_changes.is_some(), both, "{conditions}");
        assert!(!form.conditions_json.contains("alert_on"), "the box shows it: {}", form.conditions_json);
        let mut errors = Vec::new();
        assert_eq!(form.options(&mut errors), options, "{conditions}");
        assert!(errors.is_empty(), "{errors:?}");
    }
}

#[test]
fn an_expectation_reads_back_through_the_form_and_bad_json_names_it() {
    let expect = serde_json::json!({"deadline": {"cron": "0 10 * * MON", "time_zone": "Europe/Berlin"}});
    let options: WatchOptions = serde_json::from_value(serde_json::json!({"expect": expect})).expect("options");
    let mut watch = Watch::new("acc_1", "https://example.com/", chrono::NaiveDateTime::default());
    watch.options = serde_json::to_string(&options).expect("json");
    let form = WatchForm::of(&watch);
    let mut errors = Vec::new();
    assert_eq!(form.options(&mut errors).expect, options.expect, "saving the form keeps the expectation");
    assert!(errors.is_empty(), "{errors:?}");
    let form = WatchForm { expect_json: "[1]".into(), ..WatchForm::blank() };
    form.options(&mut errors);
    assert_eq!(errors.first().map(|e| form_field(&e.field)), Some("expect_json"), "{errors:?}");
}
