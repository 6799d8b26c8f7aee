"""The pure prefix rules of app/rules/scopes.py, without a database."""

from app.rules.scopes import ScopedDelta, merge_deltas, merged_state, split_delta, without_temp


def test_split_routes_each_prefix_to_its_scope_unprefixed() -> None:
    delta = split_delta({"app:a": 1, "user:u": 2, "temp:t": 3, "s": 4, "apps:x": 5})
    assert delta == ScopedDelta(app={"a": 1}, user={"u": 2}, session={"s": 4, "apps:x": 5})


def test_an_all_temp_delta_is_empty() -> None:
    assert not split_delta({"temp:a": 1})


def test_merging_deltas_in_order_lets_later_keys_win() -> None:
    merged = merge_deltas([split_delta({"k": 1, "app:a": 1}), split_delta({"k": 2, "user:u": 3})])
    assert merged == ScopedDelta(app={"a": 1}, user={"u": 3}, session={"k": 2})


def test_without_temp_keeps_everything_else() -> None:
    assert without_temp({"temp:x": 1, "app:a": None, "k": {}}) == {"app:a": None, "k": {}}


def test_merged_state_prefixes_shared_keys() -> None:
    assert merged_state({"k": 1}, {"a": 2}, {"u": 3}) == {"k": 1, "app:a": 2, "user:u": 3}
