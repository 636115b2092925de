//! Diesel table definitions; they mirror `migrations/*/` and use only portable SQL types.
#![allow(missing_docs)]

diesel::table! {
    accounts (id) {
        id -> Text,
        name -> Text,
        created_at -> Timestamp,
        feed_key_hash -> Nullable<Text>,
        llm_base_url -> Nullable<Text>,
        llm_model -> Nullable<Text>,
        llm_api_key -> Nullable<Text>,
        llm_daily_tokens -> Nullable<BigInt>,
        quiet_hours -> Nullable<Text>,
    }
}

diesel::table! {
    users (id) {
        id -> Text,
        account_id -> Text,
        email -> Text,
        password_hash -> Text,
        time_zone -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    sessions (id_hash) {
        id_hash -> Text,
        user_id -> Text,
        csrf_token -> Text,
        created_at -> Timestamp,
        last_seen_at -> Timestamp,
        expires_at -> Timestamp,
        flash -> Nullable<Text>,
    }
}

diesel::table! {
    watch_views (user_id, watch_id) {
        user_id -> Text,
        watch_id -> Text,
        snapshot_id -> Text,
        seen_at -> Timestamp,
    }
}

diesel::table! {
    api_tokens (id) {
        id -> Text,
        account_id -> Text,
        name -> Text,
        token_hash -> Text,
        prefix -> Text,
        scopes -> Text,
        created_at -> Timestamp,
        last_used_at -> Nullable<Timestamp>,
        revoked_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    watches (id) {
        id -> Text,
        account_id -> Text,
        name -> Text,
        url -> Text,
        selector -> Nullable<Text>,
        interval_seconds -> Nullable<BigInt>,
        cron -> Nullable<Text>,
        time_zone -> Nullable<Text>,
        state -> Text,
        health -> Text,
        options -> Text,
        etag -> Nullable<Text>,
        last_modified -> Nullable<Text>,
        rebaseline -> Bool,
        next_run_at -> Timestamp,
        last_run_at -> Nullable<Timestamp>,
        consecutive_failures -> Integer,
        lease_owner -> Nullable<Text>,
        lease_until -> Nullable<Timestamp>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        tags -> Text,
        browser_since -> Nullable<Timestamp>,
        muted -> Bool,
        conditions_met -> Nullable<Bool>,
        value_failures -> Integer,
        expect_due_at -> Nullable<Timestamp>,
        expect_missed_at -> Nullable<Timestamp>,
        expect_holds -> Nullable<Bool>,
    }
}

diesel::table! {
    snapshots (id) {
        id -> Text,
        watch_id -> Text,
        content_hash -> Text,
        content -> Text,
        created_at -> Timestamp,
        screenshot_hash -> Nullable<Text>,
        visual_change_percent -> Nullable<Double>,
        readings -> Nullable<Text>,
        kept_quiet -> Nullable<Text>,
    }
}

diesel::table! {
    screenshots (hash) {
        hash -> Text,
        format -> Text,
        width -> Integer,
        height -> Integer,
        bytes -> Binary,
        created_at -> Timestamp,
    }
}

diesel::table! {
    events (id) {
        id -> Text,
        account_id -> Text,
        watch_id -> Nullable<Text>,
        endpoint_id -> Nullable<Text>,
        event_type -> Text,
        previous_snapshot_id -> Nullable<Text>,
        snapshot_id -> Nullable<Text>,
        added -> Integer,
        removed -> Integer,
        payload -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    runs (id) {
        id -> Text,
        watch_id -> Text,
        started_at -> Timestamp,
        finished_at -> Timestamp,
        outcome -> Text,
        http_status -> Nullable<Integer>,
        duration_ms -> BigInt,
        bytes -> BigInt,
        error -> Nullable<Text>,
        note -> Nullable<Text>,
        snapshot_id -> Nullable<Text>,
        event_id -> Nullable<Text>,
        engine -> Nullable<Text>,
        error_kind -> Nullable<Text>,
    }
}

diesel::table! {
    endpoints (id) {
        id -> Text,
        account_id -> Text,
        kind -> Text,
        url -> Text,
        description -> Text,
        secret -> Text,
        enabled -> Bool,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        previous_secret -> Nullable<Text>,
        previous_secret_expires_at -> Nullable<Timestamp>,
        retry_schedule -> Nullable<Text>,
        max_attempts -> Nullable<Integer>,
        rate_limit_per_second -> Nullable<Integer>,
        max_in_flight -> Nullable<Integer>,
        consecutive_failures -> Integer,
        failing_since -> Nullable<Timestamp>,
        circuit_open_until -> Nullable<Timestamp>,
        disabled_reason -> Nullable<Text>,
        event_types -> Nullable<Text>,
        paced_until -> Nullable<Timestamp>,
        settings -> Text,
        secrets -> Nullable<Text>,
        title_template -> Nullable<Text>,
        body_template -> Nullable<Text>,
        route_tags -> Nullable<Text>,
        route_watches -> Nullable<Text>,
        url_secret -> Nullable<Text>,
        delivery -> Nullable<Text>,
        quiet_hours -> Nullable<Text>,
        digest_due_at -> Nullable<Timestamp>,
        digest_since -> Nullable<Timestamp>,
    }
}

diesel::table! {
    deliveries (id) {
        id -> Text,
        account_id -> Text,
        event_id -> Text,
        endpoint_id -> Text,
        watch_id -> Nullable<Text>,
        event_type -> Text,
        body -> Binary,
        status -> Text,
        attempts -> Integer,
        max_attempts -> Integer,
        next_attempt_at -> Timestamp,
        lease_owner -> Nullable<Text>,
        lease_until -> Nullable<Timestamp>,
        last_status_code -> Nullable<Integer>,
        last_error -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        finished_at -> Nullable<Timestamp>,
        retry_base -> Integer,
        next_trigger -> Text,
        body_purged_at -> Nullable<Timestamp>,
        limited -> Bool,
        held -> Nullable<Text>,
        digest_id -> Nullable<Text>,
    }
}

diesel::table! {
    delivery_attempts (id) {
        id -> Text,
        delivery_id -> Text,
        attempt_number -> Integer,
        started_at -> Timestamp,
        duration_ms -> BigInt,
        status_code -> Nullable<Integer>,
        error_kind -> Nullable<Text>,
        error -> Nullable<Text>,
        response_snippet -> Nullable<Text>,
        trigger -> Text,
    }
}

diesel::table! {
    recoveries (id) {
        id -> Text,
        account_id -> Text,
        endpoint_id -> Text,
        since -> Timestamp,
        until -> Nullable<Timestamp>,
        statuses -> Text,
        dry_run -> Bool,
        state -> Text,
        matched -> BigInt,
        requeued -> BigInt,
        cursor -> Nullable<Text>,
        lease_owner -> Nullable<Text>,
        lease_until -> Nullable<Timestamp>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        finished_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    idempotency_keys (account_id, key) {
        account_id -> Text,
        key -> Text,
        fingerprint -> Text,
        status -> Integer,
        body -> Binary,
        created_at -> Timestamp,
    }
}

diesel::table! {
    verdicts (event_id) {
        event_id -> Text,
        account_id -> Text,
        watch_id -> Text,
        state -> Text,
        intent -> Nullable<Text>,
        summary -> Bool,
        hold -> Bool,
        attempts -> Integer,
        next_attempt_at -> Timestamp,
        deadline_at -> Timestamp,
        lease_owner -> Nullable<Text>,
        lease_until -> Nullable<Timestamp>,
        important -> Nullable<Bool>,
        reason -> Nullable<Text>,
        summary_text -> Nullable<Text>,
        model -> Nullable<Text>,
        tokens -> BigInt,
        cached -> Bool,
        error -> Nullable<Text>,
        max_attempts -> Integer,
        created_at -> Timestamp,
        decided_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    ai_cache (key) {
        key -> Text,
        model -> Text,
        important -> Bool,
        reason -> Text,
        summary -> Text,
        tokens -> BigInt,
        created_at -> Timestamp,
    }
}

diesel::table! {
    ai_usage (account_id, day) {
        account_id -> Text,
        day -> Text,
        tokens -> BigInt,
        calls -> BigInt,
    }
}

diesel::table! {
    proxies (id) {
        id -> Text,
        account_id -> Text,
        name -> Text,
        url -> Text,
        shown -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        tested_at -> Nullable<Timestamp>,
        test_status -> Nullable<Integer>,
        test_ms -> Nullable<Integer>,
        test_error -> Nullable<Text>,
    }
}

diesel::joinable!(proxies -> accounts (account_id));

diesel::table! {
    account_secrets (id) {
        id -> Text,
        account_id -> Text,
        name -> Text,
        value -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    watch_sessions (watch_id) {
        watch_id -> Text,
        state -> Text,
        cookies -> Integer,
        logins -> BigInt,
        source -> Text,
        updated_at -> Timestamp,
    }
}

diesel::joinable!(api_tokens -> accounts (account_id));
diesel::joinable!(account_secrets -> accounts (account_id));
diesel::joinable!(watch_sessions -> watches (watch_id));
diesel::joinable!(verdicts -> events (event_id));
diesel::joinable!(users -> accounts (account_id));
diesel::joinable!(sessions -> users (user_id));
diesel::joinable!(watch_views -> watches (watch_id));
diesel::joinable!(watches -> accounts (account_id));
diesel::joinable!(snapshots -> watches (watch_id));
diesel::joinable!(runs -> watches (watch_id));
diesel::joinable!(endpoints -> accounts (account_id));
diesel::joinable!(deliveries -> endpoints (endpoint_id));
diesel::joinable!(deliveries -> events (event_id));
diesel::joinable!(delivery_attempts -> deliveries (delivery_id));

diesel::allow_tables_to_appear_in_same_query!(
    accounts,
    api_tokens,
    watches,
    snapshots,
    screenshots,
    events,
    runs,
    endpoints,
    deliveries,
    delivery_attempts,
    users,
    sessions,
    watch_views,
    verdicts,
    ai_cache,
    ai_usage,
    proxies,
    account_secrets,
    watch_sessions,
);
