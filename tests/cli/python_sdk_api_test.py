"""The Python SDK's surface, without a server: every public function, method and class of the
package has a docstring and type hints, `shoal.__version__` is the project version, and a
missing dependency fails `import shoal` with an ImportError naming the module and the Debian
package. Run by ctest with /usr/bin/python3 and PYTHONPATH=build/python."""

import inspect
import os
import subprocess
import sys
import unittest

import shoal
import shoal.cache
import shoal.client
import shoal.errors
import shoal.filters
import shoal.scan
import shoal.search_session
import shoal.tenants

# The modules whose public names are the SDK's API (the generated shoal.v1 stubs are not).
MODULES = (shoal, shoal.cache, shoal.client, shoal.errors, shoal.filters, shoal.scan,
           shoal.search_session, shoal.tenants)


def defined_in(module):
    """(qualified name, object) of the public functions and classes `module` defines."""
    for name, obj in sorted(vars(module).items()):
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj) or inspect.isclass(obj):
            yield f"{module.__name__}.{name}", obj


def problems_of_function(qualified, fn):
    """What `fn` lacks: a docstring, an annotation per parameter, a return annotation."""
    out = []
    if not (fn.__doc__ or "").strip():
        out.append(f"{qualified}: no docstring")
    signature = inspect.signature(fn)
    for parameter in signature.parameters.values():
        if parameter.name in ("self", "cls"):
            continue
        if parameter.annotation is inspect.Parameter.empty:
            out.append(f"{qualified}: parameter '{parameter.name}' has no type hint")
    if signature.return_annotation is inspect.Signature.empty:
        out.append(f"{qualified}: no return type hint")
    return out


def problems_of_class(qualified, cls):
    out = []
    doc = cls.__doc__ or ""
    # A NamedTuple without a docstring gets an generated one, "Name(field, ...)".
    if not doc.strip() or doc.startswith(f"{cls.__name__}("):
        out.append(f"{qualified}: no docstring")
    fields = getattr(cls, "_fields", None)
    if fields is not None:
        missing = [f for f in fields if f not in getattr(cls, "__annotations__", {})]
        if missing:
            out.append(f"{qualified}: fields without type hints: {missing}")
    for name, member in vars(cls).items():
        if inspect.isfunction(member) and (not name.startswith("_") or name == "__init__"):
            out.extend(problems_of_function(f"{qualified}.{name}", member))
    return out


class PythonSdkApiTest(unittest.TestCase):
    def test_every_public_name_has_docstring_and_type_hints(self):
        problems = []
        checked = 0
        for module in MODULES:
            if not (module.__doc__ or "").strip():
                problems.append(f"{module.__name__}: no module docstring")
            for qualified, obj in defined_in(module):
                checked += 1
                if inspect.isclass(obj):
                    problems.extend(problems_of_class(qualified, obj))
                else:
                    problems.extend(problems_of_function(qualified, obj))
        self.assertGreater(checked, 20)  # the walk found the API
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_the_check_catches_a_bare_function(self):
        def bare(x, y=1):
            return x

        self.assertEqual(problems_of_function("bare", bare),
                         ["bare: no docstring", "bare: parameter 'x' has no type hint",
                          "bare: parameter 'y' has no type hint", "bare: no return type hint"])

    def test_exported_names_resolve(self):
        for name in shoal.__all__:
            self.assertTrue(hasattr(shoal, name), name)

    def test_version_is_the_project_version(self):
        self.assertEqual(shoal.__version__, os.environ["SHOAL_PROJECT_VERSION"])
        self.assertRegex(shoal.__version__, r"^\d+\.\d+\.\d+$")

    def test_missing_dependency_names_module_and_debian_package(self):
        for module, package in (("grpc", "python3-grpcio"), ("numpy", "python3-numpy"),
                                ("google.protobuf", "python3-protobuf")):
            # sys.modules[name] = None makes `import name` raise ImportError.
            code = f"import sys; sys.modules[{module!r}] = None; import shoal"
            run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
            self.assertNotEqual(run.returncode, 0, module)
            last = run.stderr.strip().splitlines()[-1]
            self.assertTrue(last.startswith("ImportError: shoal needs the Python module "
                                            f"'{module}'"), last)
            self.assertIn(f"apt-get install {package}", last)


if __name__ == "__main__":
    unittest.main()
