# A strategy that patches Hypothesis in its own process: its child is forked from the worker's
# drawing template, where Hypothesis is already imported, so these are the template's modules as
# the child sees them. The next task's child, forked from the same template, must not see it.
import hypothesis.internal.conjecture.data as data
import hypothesis.strategies as st

st.integers = lambda *args, **kwargs: st.just(0)
data.ConjectureData.draw_integer = lambda self, *args, **kwargs: 0
strategy = (st.integers(0, 10), st.integers(0, 10))
