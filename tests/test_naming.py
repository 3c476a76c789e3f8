"""Generated names: short, whole words, never clashing."""

from srcgrad.naming import Namer, shorten


def test_long_names_are_cut_at_whole_words():
    # Cut mid-word before: UA_times_T_out_item_minu, w_comfort_times_T_low_mi.
    assert shorten("UA_times_T_out_item_minus_T", 24) == "UA_times_T_out_item"
    assert shorten("w_comfort_times_T_low_minus_T_pow_2", 24) == "w_comfort_times_T_low"
    # Never ending on the operator that joined the next operand.
    assert shorten("dt_over_C_times_UA_times_T_out", 24) == "dt_over_C_times_UA"
    assert shorten("x_plus_y", 24) == "x_plus_y"


def test_a_long_first_word_stays_whole():
    word = "a_very_long_user_variable_name"
    assert shorten(word.replace("_", ""), 10) == word.replace("_", "")


def test_names_stay_bounded_and_unique():
    namer = Namer(taken={"UA_times_T_out_item"})
    first = namer.new("UA_times_T_out_item_minus_T")
    second = namer.new("UA_times_T_out_item_plus_eta_times_u_item")
    assert first == "UA_times_T_out_item_2" and second == "UA_times_T_out_item_3"
    for name in (first, second, namer.new("dw_comfort_times_T_low_minus_T_pow_2")):
        assert len(name) <= Namer.MAX_LENGTH + 2 and "__" not in name
    assert namer.new("class") == "class_2"   # a keyword is never a name
