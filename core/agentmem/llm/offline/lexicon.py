"""Vocabulary of the offline rules: tool categories, attribute subjects, relations, diets.

Values are lowercase; multi-word values are matched as word n-grams by :func:`category`.
"""

from __future__ import annotations

import re

from .text import words

#: Value -> category, for topic keys of tools and other single-choice preferences.
CATEGORIES: dict[str, frozenset[str]] = {
    "editor": frozenset(
        """vim neovim nvim emacs vscode vs-code sublime atom intellij pycharm nano helix zed cursor
        webstorm goland notepad++ kate gedit textmate xcode jetbrains spacemacs doom-emacs
        lazyvim""".split()
    )
    | {"vs code", "visual studio code", "sublime text", "android studio", "doom emacs"},
    "shell": frozenset("bash zsh fish powershell nushell ksh tcsh".split()),
    "os": frozenset(
        "linux ubuntu debian fedora arch macos osx windows nixos freebsd manjaro".split()
    )
    | {"mac os", "arch linux", "linux mint", "windows 11", "windows 10"},
    "programming_language": frozenset(
        """python rust golang java javascript typescript ruby c++ c# kotlin swift haskell elixir
        scala php perl lua julia dart clojure ocaml zig nim""".split()
    ),
    "package_manager": frozenset(
        "pip uv poetry conda pipenv pdm hatch npm yarn pnpm bun homebrew brew".split()
    ),
    "browser": frozenset("firefox chrome chromium safari edge brave opera vivaldi".split())
    | {"google chrome"},
    "database": frozenset(
        """postgres postgresql mysql mariadb sqlite mongodb mongo redis cassandra dynamodb duckdb
        clickhouse elasticsearch""".split()
    )
    | {"sql server"},
    "cloud": frozenset("aws gcp azure digitalocean hetzner heroku vercel netlify".split())
    | {"google cloud", "amazon web services"},
    "drink": frozenset("tea coffee espresso decaf matcha cocoa".split())
    | {"green tea", "black tea", "hot chocolate"},
    "phone": frozenset("iphone android pixel".split()),
    "terminal": frozenset("iterm iterm2 alacritty kitty wezterm warp ghostty".split()),
    "note_app": frozenset("notion obsidian evernote onenote logseq".split()),
    "theme": frozenset() | {"dark mode", "light mode", "dark theme", "light theme"},
    "indentation": frozenset("tabs spaces".split()),
    "test_framework": frozenset("pytest unittest jest mocha vitest".split()),
}
CATEGORY_OF: dict[str, str] = {v: cat for cat, vals in CATEGORIES.items() for v in vals}
LABELS: dict[str, str] = {
    "editor": "editor",
    "shell": "shell",
    "os": "operating system",
    "programming_language": "programming language",
    "package_manager": "package manager",
    "browser": "browser",
    "database": "database",
    "cloud": "cloud provider",
    "drink": "drink",
    "phone": "phone",
    "terminal": "terminal",
    "note_app": "notes app",
    "theme": "theme",
    "indentation": "indentation",
    "test_framework": "test framework",
    "color": "colour",
}
#: Subject phrases ("my favourite X", "my X is") that name a category or a known attribute.
SUBJECTS: dict[str, str] = {
    "editor": "editor",
    "text editor": "editor",
    "code editor": "editor",
    "ide": "editor",
    "shell": "shell",
    "os": "os",
    "operating system": "os",
    "programming language": "programming_language",
    "coding language": "programming_language",
    "package manager": "package_manager",
    "browser": "browser",
    "web browser": "browser",
    "database": "database",
    "db": "database",
    "cloud": "cloud",
    "cloud provider": "cloud",
    "drink": "drink",
    "beverage": "drink",
    "hot drink": "drink",
    "phone": "phone",
    "terminal": "terminal",
    "note app": "note_app",
    "notes app": "note_app",
    "note-taking app": "note_app",
    "theme": "theme",
    "color": "color",
    "colour": "color",
    "test framework": "test_framework",
    # attributes with their own keys
    "company": "employer",
    "employer": "employer",
    "workplace": "employer",
    "job": "occupation",
    "role": "occupation",
    "title": "occupation",
    "job title": "occupation",
    "position": "occupation",
    "profession": "occupation",
    "occupation": "occupation",
    "hometown": "origin",
    "home town": "origin",
    "email": "email",
    "e-mail": "email",
    "email address": "email",
    "e-mail address": "email",
    "phone number": "phone_number",
    "mobile number": "phone_number",
    "number": "phone_number",
    "cell number": "phone_number",
    "address": "address",
    "home address": "address",
    "name": "name",
    "first name": "name",
    "last name": "last_name",
    "surname": "last_name",
    "birthday": "birthday",
    "date of birth": "birthday",
    "time zone": "timezone",
    "timezone": "timezone",
    "age": "age",
    "diet": "diet",
    "native language": "native_language",
    "mother tongue": "native_language",
    "first language": "native_language",
    "github": "github",
    "github handle": "github",
    "github username": "github",
    "username": "username",
    "handle": "username",
}
RELATIONS = frozenset(
    """wife husband partner girlfriend boyfriend fiance fiancee son daughter mother father mom
    mum dad brother sister boss manager dog cat kid child baby grandmother grandfather grandma
    grandpa aunt uncle cousin roommate flatmate friend best-friend colleague cofounder
    co-founder""".split()
)
#: Subjects that are groups: "my family is ..." states no single-valued attribute.
GROUPS = frozenset(
    """family fam kids children parents friends team colleagues neighbours neighbors pets
    dogs cats students folks people siblings relatives classmates crew group""".split()
)
VAGUE_SUBJECTS = frozenset(
    """problem question point issue guess bad fault concern thought idea understanding hope
    worry pleasure apologies apology bet advice suggestion answer opinion feeling sense take
    plan""".split()
)
PROFESSIONS = re.compile(
    r"(?:engineer|developer|programmer|nurse|teacher|doctor|designer|manager|student|lawyer|"
    r"scientist|researcher|analyst|consultant|writer|architect|accountant|chef|officer|"
    r"director|founder|ceo|cto|cfo|coo|intern|professor|physician|pharmacist|artist|musician|"
    r"photographer|journalist|administrator|admin|technician|mechanic|electrician|plumber|"
    r"salesperson|marketer|recruiter|therapist|dentist|veterinarian|vet|pilot|driver|farmer|"
    r"baker|cook|waiter|waitress|cashier|clerk|librarian|translator|entrepreneur|freelancer|"
    r"contractor|specialist|lead|owner|paramedic|firefighter|surgeon|economist|statistician|"
    r"editor|producer|actor|actress|dancer|coach|trainer|tutor|lecturer|postdoc|phd student|"
    r"sre|devops|tester|qa|scrum master|product owner|data scientist)s?$",
    re.I,
)
DIETS = (
    r"vegetarian|vegan|pescatarian|pescetarian|flexitarian|carnivore|omnivore|keto|paleo|"
    r"gluten[- ]free|lactose[- ]intolerant|kosher|halal|plant[- ]based"
)
LANGUAGES = frozenset(
    """english german french spanish portuguese italian dutch polish swedish norwegian danish
    finnish russian ukrainian chinese mandarin cantonese japanese korean arabic hebrew turkish
    greek hindi czech hungarian romanian""".split()
)


def category(value: str) -> str | None:
    """The lexicon category of a value phrase (longest match in its first words)."""
    ws = words(value)[:5]
    for n in (3, 2, 1):
        for i in range(0, max(len(ws) - n + 1, 0)):
            gram = " ".join(ws[i : i + n])
            if gram in CATEGORY_OF:
                return CATEGORY_OF[gram]
            if gram.replace(" ", "-") in CATEGORY_OF:
                return CATEGORY_OF[gram.replace(" ", "-")]
    if len(ws) == 1 and ws[0] == "go":
        return "programming_language"
    return None


def label(cat: str) -> str:
    return LABELS.get(cat, cat.replace("_", " "))
