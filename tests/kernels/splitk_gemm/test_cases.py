"""Split-K GEMM cases: the input scales hidden cases draw."""


def test_drawn_input_scales_are_never_near_the_bench_cases_unit_scales():
    import math
    import random

    from kernels.splitk_gemm.cases import SCALE_MARGIN, SCALE_RANGE, draw_scales

    rng = random.Random(7)
    draws = [s for _ in range(2000) for s in draw_scales(rng).values()]
    assert all(SCALE_RANGE[0] <= s <= SCALE_RANGE[1] for s in draws)
    assert all(abs(math.log(s)) >= math.log(SCALE_MARGIN) for s in draws)
    below = sum(s < 1 for s in draws) / len(draws)
    assert 0.45 < below < 0.55  # both sides of 1, equally often
