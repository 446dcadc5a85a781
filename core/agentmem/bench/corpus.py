"""A deterministic, streaming synthetic corpus of agent memories, with queries that have answers.

Every memory is a templated but varied English sentence about people, orders, tickets,
invoices, flights, servers, meetings and preferences, carrying names, numbers, ids, places
and products. Memory ``i`` depends only on ``(seed, i)``, so the corpus can be streamed
(:func:`iter_memories` holds one memory at a time, for any ``n`` up to millions) and any
memory regenerated on its own (:func:`memory_at`).

Each memory also carries two queries whose answer it is (both name something only that
memory, or very few, carry: an id, or a person's full name with the topic):

- ``keyword``: names the memory's unique identifier (an order, ticket, invoice, booking or
  account code derived bijectively from ``i``), as a user quoting an id would;
- ``paraphrase``: names the person but says the rest in other words (synonyms,
  descriptions instead of the product or tool names), as a user asking from memory would.

Example:
    >>> m = memory_at(42, seed=7)
    >>> m == memory_at(42, seed=7) and m.index == 42
    True
    >>> [x.index for x in iter_memories(3, seed=7)]
    [0, 1, 2]
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["QUERY_KINDS", "Memory", "iter_memories", "memory_at", "unique_code"]

QUERY_KINDS: tuple[str, ...] = ("keyword", "paraphrase")


@dataclass(frozen=True, slots=True)
class Memory:
    index: int
    text: str
    memory_type: str
    keyword_query: str
    paraphrase_query: str

    def query(self, kind: str) -> str:
        return self.keyword_query if kind == "keyword" else self.paraphrase_query


FIRST = """Aarav Abena Adaeze Agnieszka Aiko Alejandro Amara Amir Ana Anders Anika Arjun Astrid
Ayesha Beatriz Bilal Bongani Camila Carlos Chen Chiara Chidi Dagny Daniel Dario Deepa Diego
Dmitri Ebony Eitan Elif Elena Emeka Emil Esther Farah Fatima Felix Femi Freya Gabriel Grace
Hana Hamid Hiroshi Ibrahim Ikaika Ines Ingrid Isabel Ivan Jamal Jana Javier Jin Joao Jonas
Julia Kai Kamala Karim Katarina Kenji Keanu Kofi Lars Layla Leila Lena Liam Lin Lucia Luis
Maeve Mai Malik Marek Maria Mateo Mei Mehmet Mila Minh Mohammed Nadia Naveen Nia Nikolai Noa
Nora Obi Olga Omar Oskar Paolo Pavel Priya Rafael Rahul Ravi Rosa Ruth Saanvi Sakura Salma
Samuel Sana Santiago Sara Sean Sergei Shira Sione Sofia Soren Sunil Tamar Tariq Thabo Tomas
Tuan Uma Valentina Vikram Wanjiru Wei Xavier Yara Yasmin Yuki Yusuf Zain Zanele Zara Zeynep
Zofia Ahmed Bruna Cyrus Dalia Enzo Fiona Goran Helga Ilse""".split()

LAST = """Abara Adeyemi Alvarez Andersen Aoki Bauer Becker Bianchi Borisov Brennan Castillo
Chandra Chowdhury Costa Dahl Dimitrov Dubois Eriksen Fernandes Fischer Fontaine Garcia
Gonzalez Gupta Haddad Hansen Hartmann Herrera Horvat Hosseini Ibrahim Ivanova Jansen Jensen
Kaur Kowalski Kruger Kumar Laine Larsen Lindqvist Lopez Mahlangu Malik Marino Martins Mendes
Meyer Mikkelsen Moreau Murphy Mwangi Nakamura Nguyen Nielsen Novak Nowak Odhiambo Okafor
Okonkwo Oliveira Olsen Ortega Osei Ozturk Park Patel Pereira Petrov Popescu Quispe Rahman
Ramirez Reddy Reyes Richter Rossi Sadeghi Saito Santos Sato Schmidt Schneider Sharma Silva
Singh Sokolov Suzuki Svensson Takahashi Tanaka Teixeira Torres Tran Umar Vargas Vasquez Virtanen
Vogel Wagner Walsh Watanabe Weber Wojcik Yamamoto Yilmaz Zhang Zhou Zielinski Abbasi Banerjee
Carvalho Delgado Esposito Farouk Gallagher Hakimi Iyer Jovanovic Kariuki Lindgren Mensah
Nasser Obradovic Pham Qureshi Rosen Shapiro Thorsen Urbano Valdez Wong Xu Yeo Zamora
Achterberg Bjork Cardenas Dlamini Engel Falk Grieve Holm Ilunga Jaramillo""".split()

CITIES = """Lisbon Porto Madrid Seville Lyon Marseille Hamburg Munich Leipzig Vienna Graz Zurich
Geneva Milan Turin Naples Krakow Gdansk Prague Brno Budapest Zagreb Ljubljana Athens Thessaloniki
Istanbul Izmir Cairo Nairobi Lagos Accra Dakar Casablanca Tunis Johannesburg Durban Dubai Doha
Mumbai Pune Bangalore Chennai Colombo Dhaka Bangkok Hanoi Manila Jakarta Singapore Seoul Busan
Osaka Kyoto Sapporo Taipei Auckland Wellington Perth Adelaide Toronto Montreal Calgary Denver
Austin Chicago Boston Seattle Portland Atlanta Lima Bogota Quito Santiago Montevideo
Rosario""".split()

COMPANIES = """Northwind Brightline Corvid Halcyon Kestrel Meridian Oakridge Pinecrest Quantia
Redwood Silverleaf Tidewater Umbra Verdant Westbrook Zenith Bluefin Copperfield Driftwood
Emberly Foxglove Granite Harbor Ironclad Juniper Lumen Mossgreen Nimbus Orchard Palisade
Quarry Riverton Saltmarsh Thornbury Vantage Willowby Yardley Ashgrove Birchwood Cobalt""".split()

# (product as written, product as a user would describe it)
PRODUCTS: tuple[tuple[str, str], ...] = (
    ("standing desks", "height-adjustable work tables"),
    ("noise-cancelling headphones", "headsets that block out sound"),
    ("ergonomic keyboards", "typing devices that are easy on the wrists"),
    ("laptop docking stations", "hubs for connecting notebooks to monitors"),
    ("27-inch monitors", "large computer screens"),
    ("office chairs", "seats for the workplace"),
    ("espresso machines", "coffee makers"),
    ("wireless mice", "cordless pointing devices"),
    ("whiteboards", "boards you write on with markers"),
    ("label printers", "machines that print stickers"),
    ("webcams", "video cameras for calls"),
    ("USB-C chargers", "power adapters"),
    ("air purifiers", "devices that clean the air"),
    ("desk lamps", "lights for the desk"),
    ("server racks", "cabinets for servers"),
    ("solar panels", "photovoltaic modules"),
    ("hiking boots", "shoes for trails"),
    ("winter tires", "snow tyres for the car"),
    ("yoga mats", "exercise mats"),
    ("water filters", "filters for drinking water"),
    ("conference speakerphones", "speakers for meeting rooms"),
    ("security badges", "access cards for the building"),
    ("printer toner cartridges", "ink refills for the printer"),
    ("electric scooters", "battery-powered scooters"),
)

TOOLS: tuple[tuple[str, str], ...] = (
    ("Jenkins", "the old CI server"),
    ("GitHub Actions", "the hosted CI pipelines"),
    ("Terraform", "the infrastructure-as-code tool"),
    ("Kubernetes", "the container orchestrator"),
    ("PostgreSQL", "the relational database"),
    ("Redis", "the in-memory cache"),
    ("Kafka", "the event streaming platform"),
    ("Grafana", "the dashboards tool"),
    ("Sentry", "the error tracker"),
    ("Airflow", "the workflow scheduler"),
    ("Elasticsearch", "the search cluster"),
    ("RabbitMQ", "the message broker"),
)

AIRLINES = ("TAP", "Lufthansa", "KLM", "Emirates", "Qatar Airways", "ANA", "Iberia", "Delta")
SEATS = (
    ("window", "next to the window"),
    ("aisle", "on the aisle"),
    ("exit row", "with extra legroom"),
)
LANGUAGES = (
    ("Portuguese", "the language of Brazil"),
    ("Japanese", "the language spoken in Tokyo"),
    ("Swahili", "the language of East Africa"),
    ("Korean", "the language spoken in Seoul"),
    ("Turkish", "the language of Istanbul"),
    ("Polish", "the language spoken in Warsaw"),
    ("Arabic", "the language of Cairo"),
    ("Dutch", "the language of Amsterdam"),
)
ALLERGENS = (
    ("peanuts", "a kind of legume"),
    ("shellfish", "seafood like shrimp"),
    ("gluten", "wheat"),
    ("sesame", "seeds used in tahini"),
    ("dairy", "milk products"),
    ("eggs", "anything made with egg"),
)
PETS = (
    ("beagle", "dog"),
    ("tabby cat", "cat"),
    ("parrot", "bird"),
    ("corgi", "dog"),
    ("rabbit", "bunny"),
)
PET_NAMES = "Biscuit Pepper Mango Luna Ziggy Olive Pickle Nacho Maple Comet Tofu Waffles".split()
DISHES = (
    ("mushroom risotto", "the rice dish"),
    ("grilled octopus", "the seafood starter"),
    ("lamb tagine", "the slow-cooked stew"),
    ("pad thai", "the noodles"),
    ("pistachio gelato", "the ice cream"),
    ("ramen", "the noodle soup"),
)
CHANNELS = (
    ("email", "by mail"),
    ("SMS", "by text message"),
    ("Slack", "on chat"),
    ("phone", "by calling"),
)
FORMATS = (("PDF", "a PDF file"), ("CSV", "a spreadsheet export"), ("XLSX", "an Excel workbook"))
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
MONTHS = (
    "January February March April May June July August September October November December".split()
)
COLORS = "red blue silver black white green grey yellow".split()
VEHICLES = (
    ("van", "delivery vehicle"),
    ("hatchback", "small car"),
    ("pickup truck", "truck"),
    ("motorbike", "motorcycle"),
)
CLOUDS = (
    "AWS eu-west-1",
    "GCP europe-west4",
    "Azure westeurope",
    "AWS us-east-2",
    "GCP asia-northeast1",
)
PROJECTS = "Atlas Beacon Cascade Delta Ember Falcon Gemini Harbor Iris Jetstream Keystone Lighthouse".split()
SERVICES = (
    "legal review",
    "cloud hosting",
    "translation",
    "office cleaning",
    "security audit",
    "catering",
)
DOCS = (
    ("passport", "travel document"),
    ("driving licence", "permit to drive"),
    ("work visa", "residence permit"),
)

_ALPHABET = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZ"  # no I, O: ids read unambiguously
_SPACE = len(_ALPHABET) ** 6


def unique_code(i: int, salt: int) -> str:
    """A 6-character code that is a bijection of ``i`` (for ``i`` below 34**6) for each salt."""
    n = (i * 1_000_003 + salt * 7_919_113) % _SPACE
    out = []
    for _ in range(6):
        n, r = divmod(n, len(_ALPHABET))
        out.append(_ALPHABET[r])
    return "".join(out)


def _name(r: random.Random) -> tuple[str, str]:
    first, last = r.choice(FIRST), r.choice(LAST)
    return first, f"{first} {last}"


def _date(r: random.Random) -> str:
    return f"{r.randint(1, 28)} {r.choice(MONTHS)}"


def _time(r: random.Random) -> str:
    return f"{r.randint(7, 18)}:{r.choice(('00', '15', '30', '45'))}"


Built = tuple[str, str, str, str]  # text, memory_type, keyword query, paraphrase query


def _order(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    product, desc = r.choice(PRODUCTS)
    oid = f"ORD-{unique_code(i, 1)}"
    qty, city, day = r.randint(2, 60), r.choice(CITIES), r.choice(WEEKDAYS)
    text = r.choice(
        (
            f"{name} ordered {qty} {product} (order {oid}) for delivery to the {city} office by {day}.",
            f"Order {oid}: {qty} {product} for {name}, shipping to {city}, due on {day}.",
            f"Placed order {oid} on behalf of {name}: {qty} {product}, delivery address in {city}.",
        )
    )
    return text, "event", f"order {oid}", f"when will the {desc} that {name} bought arrive?"


def _ticket(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    tool, desc = r.choice(TOOLS)
    tid = f"INC-{unique_code(i, 2)}"
    fmt = r.choice(FORMATS)[0]
    minutes = r.randint(3, 90)
    text = r.choice(
        (
            f"Ticket {tid}: {name} reported that {tool} times out after {minutes} minutes when exporting {fmt} reports.",
            f"{name} opened ticket {tid} because {tool} keeps failing on {fmt} exports (timeout after {minutes} min).",
        )
    )
    return text, "task", f"ticket {tid}", f"what problem did {name} report with {desc}?"


def _invoice(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    inv = f"INV-{unique_code(i, 3)}"
    amount = r.randint(120, 98_000)
    service, company = r.choice(SERVICES), r.choice(COMPANIES)
    text = r.choice(
        (
            f"{name} paid invoice {inv} of ${amount:,} to {company} for {service} on {_date(r)}.",
            f"Invoice {inv} from {company} ({service}, ${amount:,}) was approved by {name}.",
        )
    )
    return text, "fact", f"invoice {inv}", f"how much did {name} spend with {company} on {service}?"


def _flight(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    code = f"BK{unique_code(i, 4)}"
    a, b = r.sample(CITIES, 2)
    airline = r.choice(AIRLINES)
    text = r.choice(
        (
            f"{name}'s {airline} flight from {a} to {b} departs at {_time(r)} on {_date(r)}, booking reference {code}.",
            f"Booked {name} on {airline} {a} -> {b} for {_date(r)} (ref {code}).",
        )
    )
    return text, "event", f"booking {code}", f"when does {name} fly to {b}?"


def _server(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    host = f"srv-{unique_code(i, 5).lower()}"
    tool, desc = r.choice(TOOLS)
    port = r.randint(1025, 65000)
    city = r.choice(CITIES)
    text = r.choice(
        (
            f"The staging host {host} in the {city} datacenter, owned by {name}, runs {tool} on port {port}.",
            f"{host} ({city} region, owner {name}) exposes {tool} on port {port}; restart it with the ops runbook.",
        )
    )
    return (
        text,
        "note",
        f"{host} port",
        f"which port does {desc} use on the staging machine {name} looks after?",
    )


def _meeting(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    company, project = r.choice(COMPANIES), r.choice(PROJECTS)
    room = f"{r.randint(1, 9)}{unique_code(i, 6)[:3]}"
    text = r.choice(
        (
            f"The {project} migration review with {company} moved to {_date(r)} at {_time(r)} in room {room}, hosted by {name}.",
            f"{name} rescheduled the {company} {project} sync to {_date(r)}, {_time(r)}, room {room}.",
        )
    )
    return (
        text,
        "event",
        f"room {room}",
        f"when is {name}'s meeting with {company} about {project}?",
    )


def _seat(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    seat, _desc = r.choice(SEATS)
    airline = r.choice(AIRLINES)
    member = f"FF{unique_code(i, 7)}"
    text = r.choice(
        (
            f"{name} prefers {seat} seats on long flights and flies {airline} (frequent flyer {member}).",
            f"Seat preference for {name}: {seat}. Loyalty number {member} with {airline}.",
        )
    )
    return (
        text,
        "preference",
        f"frequent flyer {member}",
        f"where does {name} like to sit on a plane?",
    )


def _allergy(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    child = r.choice(FIRST)
    allergen, _desc = r.choice(ALLERGENS)
    rec = f"MED-{unique_code(i, 8)}"
    text = r.choice(
        (
            f"{name}'s son {child} is allergic to {allergen}; the school has medical record {rec}.",
            f"Allergy note ({rec}): {child}, child of {name}, must avoid {allergen}.",
        )
    )
    return (
        text,
        "fact",
        f"medical record {rec}",
        f"what food must {name}'s kid {child} stay away from?",
    )


def _language(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    lang, _desc = r.choice(LANGUAGES)
    day, city = r.choice(WEEKDAYS), r.choice(CITIES)
    course = f"LC-{unique_code(i, 9)}"
    text = r.choice(
        (
            f"{name} is learning {lang} and practises every {day} with a tutor from {city} (course {course}).",
            f"{name} enrolled in {lang} course {course}; lessons are on {day}s.",
        )
    )
    return text, "fact", f"course {course}", f"which language is {name} studying?"


def _pet(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    pet, kind = r.choice(PETS)
    pet_name, city = r.choice(PET_NAMES), r.choice(CITIES)
    chip = f"CHIP-{unique_code(i, 10)}"
    text = r.choice(
        (
            f"{name} lives in {city} with a {pet} called {pet_name} (microchip {chip}).",
            f"{pet_name}, {name}'s {pet}, is registered under microchip {chip} in {city}.",
        )
    )
    return text, "fact", f"microchip {chip}", f"what is the name of {name}'s {kind}?"


def _switch(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    (old, old_desc), (new, _) = r.sample(TOOLS, 2)
    minutes = r.randint(8, 70)
    adr = f"ADR-{unique_code(i, 11)}"
    text = r.choice(
        (
            f"Decision {adr}: {name} moved the team from {old} to {new} because jobs took {minutes} minutes.",
            f"{name} decided to replace {old} with {new} ({adr}); {old} runs were taking {minutes} min.",
        )
    )
    return text, "decision", f"decision {adr}", f"why did {name} stop using {old_desc}?"


def _restaurant(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    dish, _desc = r.choice(DISHES)
    company, city = r.choice(COMPANIES), r.choice(CITIES)
    stars = r.randint(2, 5)
    table = f"RSV-{unique_code(i, 12)}"
    text = r.choice(
        (
            f"{name} rated {company} Bistro in {city} {stars} stars and loved the {dish} (reservation {table}).",
            f"Reservation {table} at {company} Bistro, {city}: {name} gave it {stars}/5, {dish} was the highlight.",
        )
    )
    return (
        text,
        "preference",
        f"reservation {table}",
        f"what did {name} enjoy eating at the bistro in {city}?",
    )


def _report(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    company = r.choice(COMPANIES)
    fmt, _desc = r.choice(FORMATS)
    day = r.choice(WEEKDAYS)
    rid = f"RPT-{unique_code(i, 13)}"
    text = r.choice(
        (
            f"{name} wants the quarterly report {rid} for {company} as {fmt} by {day}.",
            f"Deliver {company}'s quarterly numbers ({rid}) to {name} in {fmt} format before {day}.",
        )
    )
    return (
        text,
        "instruction",
        f"report {rid}",
        f"in what file type should {name} receive the {company} quarterly figures?",
    )


def _marathon(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    km, city, month = r.randint(4, 25), r.choice(CITIES), r.choice(MONTHS)
    bib = f"BIB-{unique_code(i, 14)}"
    text = r.choice(
        (
            f"{name} runs {km} km every morning to train for the {city} marathon in {month} (bib {bib}).",
            f"Training log: {name}, {km} km a day, target race {city} marathon, {month}, bib number {bib}.",
        )
    )
    return text, "fact", f"bib {bib}", f"which race is {name} preparing for?"


def _cloud(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    company, project, cloud = r.choice(COMPANIES), r.choice(PROJECTS), r.choice(CLOUDS)
    budget = r.randint(2, 90) * 100
    acct = f"ACC-{unique_code(i, 15)}"
    text = r.choice(
        (
            f"{company} will host the {project} service on {cloud} under account {acct}, budget ${budget:,} per month, approved by {name}.",
            f"Approved by {name}: {company}'s {project} runs on {cloud}, account {acct}, ${budget:,}/month cap.",
        )
    )
    return (
        text,
        "decision",
        f"account {acct}",
        f"where will the {company} {project} system that {name} signed off be deployed?",
    )


def _contact(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    channel, _desc = r.choice(CHANNELS)
    hour = r.randint(5, 9)
    cid = f"CUS-{unique_code(i, 16)}"
    text = r.choice(
        (
            f"{name} (customer {cid}) prefers to be contacted by {channel} after {hour} pm.",
            f"Contact preference for customer {cid}, {name}: {channel}, only after {hour} pm.",
        )
    )
    return text, "preference", f"customer {cid}", f"how should we reach {name} in the evening?"


def _subscription(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    product, desc = r.choice(PRODUCTS)
    amount = r.randint(5, 400)
    sub = f"SUB-{unique_code(i, 17)}"
    text = r.choice(
        (
            f"The {product} maintenance plan {sub} for {name} renews on {_date(r)} at ${amount} per month.",
            f"Subscription {sub} ({product} service, {name}) costs ${amount}/month and renews {_date(r)}.",
        )
    )
    return text, "fact", f"subscription {sub}", f"when does {name}'s plan for {desc} renew?"


def _parking(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    color = r.choice(COLORS)
    vehicle, desc = r.choice(VEHICLES)
    plate = f"{unique_code(i, 18)[:3]}-{unique_code(i, 18)[3:]}"
    spot = r.randint(1, 400)
    text = r.choice(
        (
            f"{name} parks a {color} {vehicle} with plate {plate} in spot {spot}.",
            f"Parking: spot {spot} is assigned to {name}'s {color} {vehicle}, plate {plate}.",
        )
    )
    return text, "note", f"plate {plate}", f"which parking space does {name}'s {desc} use?"


def _document(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    doc, desc = r.choice(DOCS)
    ref = f"REF-{unique_code(i, 19)}"
    text = r.choice(
        (
            f"Reminder: {name}'s {doc} expires on {_date(r)}; renewal reference {ref}.",
            f"Renew {name}'s {doc} before {_date(r)} (case {ref}).",
        )
    )
    return text, "task", f"reference {ref}", f"when does {name}'s {desc} run out?"


def _shipment(r: random.Random, i: int) -> Built:
    _, name = _name(r)
    product, desc = r.choice(PRODUCTS)
    a, b = r.sample(CITIES, 2)
    track = f"TRK{unique_code(i, 20)}"
    kg = r.randint(1, 900)
    text = r.choice(
        (
            f"Shipment {track} with {kg} kg of {product} left {a} for {b}; {name} signs for it.",
            f"{name} is waiting for tracking number {track}: {product}, {kg} kg, {a} to {b}.",
        )
    )
    return text, "event", f"tracking {track}", f"from which city were the {desc} for {name} sent?"


_TEMPLATES: tuple[Callable[[random.Random, int], Built], ...] = (
    _order,
    _ticket,
    _invoice,
    _flight,
    _server,
    _meeting,
    _seat,
    _allergy,
    _language,
    _pet,
    _switch,
    _restaurant,
    _report,
    _marathon,
    _cloud,
    _contact,
    _subscription,
    _parking,
    _document,
    _shipment,
)


def memory_at(i: int, seed: int = 0) -> Memory:
    """Memory number ``i`` of the corpus of ``seed`` (depends on nothing else)."""
    r = random.Random((seed << 40) ^ i)
    template = _TEMPLATES[r.randrange(len(_TEMPLATES))]
    text, memory_type, kw, para = template(r, i)
    return Memory(i, text, memory_type, kw, para[0].upper() + para[1:])


def iter_memories(n: int, seed: int = 0, start: int = 0) -> Iterator[Memory]:
    """Memories ``start`` .. ``n - 1``, one at a time."""
    for i in range(start, n):
        yield memory_at(i, seed)
