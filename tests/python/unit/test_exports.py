import inspect

import sandpod


def test_all_is_exactly_the_public_names():
    public = {
        name
        for name, value in vars(sandpod).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert set(sandpod.__all__) == public | {"__version__"}
    assert len(sandpod.__all__) == len(set(sandpod.__all__))
    assert sorted(sandpod.__all__) == sorted(sandpod.__all__, key=str)


def test_exports_come_from_private_modules():
    for name in sandpod.__all__:
        obj = getattr(sandpod, name)
        module = getattr(obj, "__module__", "sandpod._x")
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert module.startswith("sandpod._"), (name, module)


def test_every_error_derives_from_the_root():
    for name in sandpod.__all__:
        obj = getattr(sandpod, name)
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            assert issubclass(obj, sandpod.SandpodError), name


def test_py_typed_is_shipped():
    from importlib import resources

    assert resources.files("sandpod").joinpath("py.typed").is_file()
