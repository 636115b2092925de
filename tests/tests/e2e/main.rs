//! End-to-end tests: the real application in-process on 127.0.0.1:0, a real page server and a
//! real webhook receiver on loopback, real SQLite files and (when
//! `DRIFTWATCH_TEST_POSTGRES_URL` is set at build time) a fresh PostgreSQL database per test.
//! Every scenario runs on both backends; the browser harness's own tests need neither.

mod conformance;
mod support;

mod agents;
mod ai_api;
mod ai_ui;
mod ai_verdicts;
mod api;
mod browser;
mod channels;
mod delivery;
mod expectations;
mod imports;
mod logins;
mod mcp;
mod openapi;
mod ops;
mod ops_cuts;
mod pages;
mod pipeline;
mod polish;
mod proxies;
mod reader_time;
mod render_fixes;
mod rendering;
mod scale;
mod secrets_at_rest;
mod store;
mod ui;
mod ui_browser;
mod ui_reader_time;
mod values;
mod values_alerts;
mod walls;
mod watches;

/// Declares each scenario `async fn name(backend: Backend)` as a test on SQLite and, when
/// configured, on PostgreSQL.
macro_rules! on_both_backends {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::$module::$name(driftwatch_test_support::Backend::Sqlite).await
                }
            )*
        }
        #[cfg(pg_tests)]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    crate::$module::$name(driftwatch_test_support::Backend::Postgres).await
                }
            )*
        }
    };
}

on_both_backends!(
    reader_time::a_daily_digest_gathers_changes_into_one_message_per_kind,
    reader_time::quiet_hours_hold_deliveries_until_they_end,
    reader_time::bad_timing_is_refused_by_name,
    reader_time::a_digest_opens_with_a_models_summary,
    reader_time::an_empty_period_sends_a_note_when_asked,
    ui_reader_time::digests_and_quiet_hours_in_the_browser,
    expectations::a_missed_expectation_is_told_once_and_met_by_the_next_change,
    expectations::an_expectation_deadline_shows_in_its_own_zone,
    expectations::a_value_expectation_is_told_when_broken_and_restored,
    expectations::bad_expectations_are_refused_by_field,
    imports::a_changedetection_backup_moves_in_with_its_history,
    imports::a_bad_backup_is_refused_and_imports_nothing,
    imports::the_import_page_previews_then_imports,
    logins::secrets_are_set_replaced_and_never_shown,
    logins::a_cookies_txt_becomes_a_watch_session,
    logins::ten_checks_take_one_login,
    logins::the_ui_keeps_secrets_and_imports_sessions,
    logins::the_login_pages_are_accessible_in_a_browser,
    logins::an_imported_session_spares_the_browser_its_login,
    walls::a_bot_wall_is_named_and_never_a_change,
    walls::a_page_with_vendor_beacons_is_a_page,
    walls::when_blocked_the_browser_gets_past_a_wall_for_bots,
    walls::the_wall_corpus_through_real_checks,
    walls::a_blocked_watch_says_what_stands_in_the_way,
    proxies::checks_leave_by_the_proxy_their_watch_names,
    proxies::a_failing_proxy_is_named_not_the_page,
    proxies::a_private_proxy_needs_the_operators_word,
    proxies::bad_proxy_input_is_refused_by_field,
    proxies::proxies_are_kept_tested_and_named_in_the_watch_form,
    ai_verdicts::an_intent_decides_which_change_is_sent,
    ai_verdicts::a_failing_model_is_retried_and_odd_answers_are_read,
    ai_verdicts::a_stalled_model_delays_nobody_and_the_deadline_sends_once,
    ai_verdicts::a_waiting_change_survives_a_restart,
    ai_verdicts::bad_intents_are_refused_by_name,
    pipeline::a_change_is_delivered_once_and_signed,
    pipeline::a_failing_receiver_is_retried_then_dead_lettered,
    pipeline::a_failing_page_is_a_failed_run_not_a_change,
    pipeline::long_texts_and_diffs_are_cut_and_say_so,
    pipeline::a_page_nested_too_deep_fails_its_run_clearly,
    pipeline::what_remote_servers_send_is_stored_whatever_it_says,
    pipeline::each_endpoint_of_the_owner_gets_one_delivery,
    rendering::a_script_written_price_is_seen_by_browser_and_auto_not_http,
    rendering::steps_and_screenshots_are_kept_shown_to_their_owner_and_purged,
    rendering::a_visual_only_change_alerts_and_an_ignored_region_does_not,
    rendering::browser_options_are_checked_field_by_field,
    rendering::without_a_browser_the_engine_is_refused_and_a_large_screenshot_is_not_kept,
    render_fixes::the_default_wait_reads_what_a_script_fetches_every_time,
    render_fixes::auto_renders_an_element_the_html_leaves_empty,
    render_fixes::without_chromium_the_watch_page_says_why,
    api::owners_cannot_see_each_other,
    api::bad_input_answers_problem_json,
    api::lists_page_with_a_cursor,
    api::private_targets_are_refused_unless_allowed,
    agents::tokens_are_managed_and_scoped,
    agents::the_changes_feed_continues_where_it_left_off,
    agents::requests_carry_an_id,
    agents::etags_idempotency_and_rate_limits,
    agents::a_key_in_flight_is_not_run_twice,
    openapi::every_documented_operation_is_routed,
    ops::metrics_move_with_real_work,
    ops::readiness_follows_the_database,
    ops::stalled_clients_cannot_take_the_server,
    ops::stopping_gives_back_watches_not_yet_fetched,
    ops::a_hanging_host_or_account_leaves_room_for_others,
    ops::retention_keeps_the_newest_runs_and_what_is_owed,
    secrets_at_rest::no_secret_is_stored_in_plaintext,
    secrets_at_rest::a_stored_secret_can_be_removed,
    store::concurrent_claims_never_overlap,
    store::a_wide_fan_out_is_queued_whole,
    store::another_accounts_ids_find_nothing_in_the_store,
    store::limited_endpoints_take_turns,
    store::sessions_expire_idle_and_absolute_and_unseen_is_per_user,
    store::outbox_statements_use_their_indexes,
    store::batched_enqueues_answer_each_request_alone,
    watches::watches_can_be_updated_paused_and_deleted,
    watches::snapshots_and_diffs_are_readable,
    watches::failing_checks_raise_failed_then_recovered,
    watches::failing_watches_back_off_until_a_success,
    watches::noise_is_filtered_and_real_changes_alert_once,
    watches::requests_follow_the_watch_and_304_costs_nothing,
    watches::one_host_is_not_hammered_and_changes_can_be_confirmed,
    watches::check_now_joins_a_running_check,
    watches::tags_search_and_bulk_actions,
    scale::three_workers_send_each_delivery_once,
    scale::an_idle_node_hears_of_work_queued_elsewhere,
    scale::the_outbox_notification_names_who_queued,
    scale::a_claim_takes_only_what_each_endpoint_has_room_for,
    scale::limits_hold_across_three_nodes,
    scale::a_limit_gained_behind_the_flags_still_holds,
    delivery::retries_follow_the_schedule_then_dead_letter,
    delivery::a_recovering_endpoint_succeeds_on_retry,
    delivery::redelivery_resends_the_same_bytes,
    delivery::gone_disables_the_endpoint,
    delivery::retry_after_is_honoured,
    delivery::a_hanging_receiver_times_out,
    delivery::the_circuit_opens_holds_and_closes,
    delivery::rotation_signs_with_both_secrets,
    delivery::recover_requeues_exactly_the_matching_set,
    delivery::slack_endpoints_get_slack_messages,
    channels::every_chat_kind_is_delivered_in_its_providers_shape,
    channels::each_chat_kind_retries_dead_letters_and_redelivers_the_same_bytes,
    channels::email_arrives_as_text_and_html_and_smtp_codes_decide,
    channels::email_over_tls_trusts_the_configured_authority_only,
    channels::routes_and_mute_decide_who_is_told,
    channels::templates_are_checked_at_save_and_failures_dead_letter,
    channels::secrets_are_encrypted_at_rest_and_survive_a_key_rotation,
    channels::apprise_urls_become_endpoints,
    values::a_price_condition_alerts_once_when_it_crosses,
    values::conditions_that_already_hold_alert_on_the_first_check,
    values::bad_values_and_conditions_are_refused_naming_the_field,
    values::a_value_that_moved_is_in_the_alert_without_conditions,
    values::presets_are_saved_as_the_rules_they_stand_for,
    values::a_value_that_keeps_failing_turns_the_watch_value_missing,
    values::each_source_reads_a_local_page,
    values_alerts::one_price_drop_is_one_alert,
    values_alerts::a_backtest_expands_presets_as_a_save_does,
    values_alerts::a_currency_that_does_not_exist_is_refused,
    delivery::per_endpoint_settings_are_validated_and_used,
    delivery::retention_purges_bodies_but_keeps_rows,
    delivery::a_long_failing_endpoint_is_disabled,
    delivery::a_hanging_endpoint_does_not_delay_healthy_ones,
    delivery::a_rate_limited_endpoint_is_paced,
    delivery::endpoints_receive_only_their_event_types,
    ui::first_run_sign_in_and_sign_out,
    ui::a_change_shows_as_a_highlighted_diff,
    ui::endpoints_deliveries_redelivery_and_recovery,
    ui::channels_routes_templates_and_mute_in_the_browser,
    ui::tokens_feed_and_bulk_actions,
    ui::forms_need_their_token_and_accounts_stay_apart,
    ui_browser::a_rendered_watch_shows_what_the_browser_saw,
    ui_browser::screenshots_show_only_when_kept_and_only_to_their_owner,
    ui_browser::values_and_conditions_are_set_shown_back_and_tried_in_the_form,
    pages::a_post_without_its_token_is_refused,
    pages::a_foreign_origin_is_refused,
    pages::sign_in_redirects_only_to_this_site,
    pages::another_accounts_ids_answer_not_found,
    pages::form_errors_stand_beside_their_fields,
    pages::pages_are_private_and_locked_down,
    mcp::an_agent_watches_a_page_through_the_python_sdk,
    mcp::other_accounts_and_read_only_tokens_are_held_off,
    mcp::the_endpoint_refuses_strangers_before_the_protocol,
    mcp::a_subscribed_agent_is_told_when_the_page_changes,
    mcp::the_rate_limit_holds_through_mcp,
    mcp::an_agent_redelivers_a_dead_letter,
    mcp::open_sessions_are_capped,
    polish::pages_read_well_on_a_phone_and_say_things_right,
    polish::a_preview_names_the_setting_that_failed_it,
    polish::the_latest_diff_says_no_change_yet_before_the_first,
    ops_cuts::bulk_actions_on_every_watch_need_all,
    ops_cuts::email_logins_over_each_tls_and_their_failures_in_words,
    ops_cuts::pages_name_the_account_they_show,
    ai_ui::a_model_decides_from_the_form_to_the_watch_page,
    ai_ui::an_account_sets_its_own_model_on_the_account_page,
    ai_ui::the_servers_model_is_named_where_it_is_used,
    ai_api::options_ai_round_trip_and_bad_input_names_the_field,
    ai_api::an_accounts_own_model_is_set_without_showing_its_key,
    ai_api::a_held_change_is_delivered_once_when_released,
    ai_api::an_intent_is_tried_on_past_checks_and_the_second_try_is_free,
);

/// The browser harness tested on its own pages: no application or database involved.
mod browser_harness {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn drives_a_form_on_a_strict_csp_page() {
        crate::browser::self_test::drives_a_form_on_a_strict_csp_page().await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn emulates_dark_mode_and_screenshots_both_sizes() {
        crate::browser::self_test::emulates_dark_mode_and_screenshots_both_sizes().await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn axe_finds_serious_violations_despite_the_csp() {
        crate::browser::self_test::axe_finds_serious_violations_despite_the_csp().await
    }
}

/// A real model, when `DRIFTWATCH_TEST_LLM_URL` names one (skipped, saying so, otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_model_judges_direction_and_numbers() {
    ai_verdicts::a_real_model_judges_direction_and_numbers().await
}
