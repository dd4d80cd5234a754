"""Returns objects that answer every comparison, arithmetic and conversion as a test would want.
__VARIANT__ picks what add returns: an object, a float subclass, a list of them, a generator."""


class Liar:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __lt__(self, other):
        return True

    __le__ = __gt__ = __ge__ = __lt__

    def __sub__(self, other):
        return self

    __rsub__ = __add__ = __radd__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __sub__

    def __abs__(self):
        return self

    def __round__(self, n=None):
        return self

    def __bool__(self):
        return True

    def __float__(self):
        return 3.75

    def __index__(self):
        return 3

    def __hash__(self):
        return hash(3)

    def __iter__(self):
        return iter([3])

    def __len__(self):
        return 1

    def __contains__(self, item):
        return True


class LyingFloat(float):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __lt__(self, other):
        return True

    def __sub__(self, other):
        return LyingFloat(0.0)

    __rsub__ = __sub__
    __hash__ = float.__hash__


def add_object(x, y):
    return Liar()


def add_float(x, y):
    return LyingFloat(99.0)


def add_list(x, y):
    return [Liar(), Liar()]


def add_generator(x, y):
    yield Liar()
    yield Liar()


add = __VARIANT__
