package vaultgen

import "strings"

// The word lists below are the generator's vocabulary. Lists drawn uniformly
// give medium-frequency terms; topicNouns is drawn with a Zipf distribution,
// so its head is frequent and its tail rare; rareTerm adds a long tail of
// made-up names that occur in a handful of notes each.

var firstNames = []string{
	"Dana", "Tomás", "Minji", "Priya", "Jonas", "Aiko", "Marcus", "Elena", "Kwame", "Sofia",
	"Liam", "Hana", "Mateo", "Ingrid", "Ravi", "Chloe", "Omar", "Yuki", "Felix", "Amara",
	"Noah", "Leila", "Sven", "Isabel", "Daniel", "Nadia", "Hugo", "Mei", "Oscar", "Zara",
	"Theo", "Lucia", "Arjun", "Greta", "Samuel", "Ana", "Viktor", "Jisoo", "Pablo", "Freya",
	"Eli", "Rosa", "Karim", "Astrid", "Ben", "Carmen", "Jae", "Maya", "Nils", "Ruth",
}

var lastNames = []string{
	"Whitfield", "Rivera", "Park", "Nair", "Becker", "Tanaka", "Okafor", "Rossi", "Mensah", "Lindqvist",
	"Moreau", "Kim", "Haddad", "Novak", "Fischer", "Santos", "Ivanova", "Chen", "Dubois", "Kowalski",
	"Osei", "Yamamoto", "Larsen", "Ortiz", "Brennan", "Choi", "Vasquez", "Sato", "Hughes", "Müller",
	"Petrov", "Lee", "Andersen", "Costa", "Walsh", "Nakamura", "Horvat", "Reyes", "Bauer", "Singh",
}

// exercise is a barbell lift with its working weight (lbs) at the start of a
// training cycle.
type exercise struct {
	name  string
	short string
	base  int
}

var lifts = [][]exercise{
	// Monday, Wednesday, Friday
	{{"squat", "squat", 245}, {"bench press", "bench", 165}, {"barbell row", "rows", 135}},
	{{"deadlift", "deadlift", 295}, {"overhead press", "OHP", 95}, {"chin-ups", "chins", 0}},
	{{"bench press", "bench", 175}, {"front squat", "front squat", 185}, {"romanian deadlift", "RDL", 205}},
}

var liftFeel = []string{
	"felt solid", "moved fast", "grindy on the last set", "easy, could have done more",
	"form was sloppy on the last reps", "best bar speed in a while", "ok, nothing special",
	"left hip a bit tight", "paused reps, humbling", "smooth", "belt on for the top set",
}

var heavyFeel = []string{
	"felt really heavy", "felt like twice the weight", "everything felt heavy today",
	"bar felt heavy from the first warm-up set", "no pop at all, heavy and slow",
}

var breakfasts = []string{
	"coffee and two eggs", "overnight oats with protein powder", "greek yogurt, granola, berries",
	"toast with peanut butter", "just coffee", "omelette with spinach", "bagel and cream cheese",
	"banana and a protein shake", "leftover rice with a fried egg", "porridge with honey",
}

var meals = []string{
	"chicken rice bowl", "turkey chili", "salmon, potatoes and broccoli", "burrito", "poke bowl",
	"bibimbap", "ramen", "pasta with meat sauce", "thai basil chicken", "lentil soup", "steak and salad",
	"chicken thighs with roasted veg", "tuna sandwich", "kimchi fried rice", "falafel wrap", "pho",
	"shakshuka", "beef stir fry", "caesar salad", "sushi", "dal and rice", "tacos", "pizza",
	"leftover curry", "meal prep chicken and rice", "bulgogi", "tofu stir fry", "quesadillas",
	"miso soup and onigiri", "cottage cheese and fruit", "chicken noodle soup", "gyoza",
}

var snacks = []string{
	"protein bar", "apple and peanut butter", "nuts", "jerky", "cottage cheese", "rice cakes",
	"a banana", "dark chocolate", "yogurt", "hummus and carrots",
}

var moods = []string{
	"good", "calm", "stressed", "tired", "happy", "flat", "anxious", "content", "irritable",
	"motivated", "meh", "focused", "restless", "grateful",
}

var conditioning = []string{
	"easy run", "bike ride", "long walk", "rowing machine intervals", "hike", "incline treadmill walk",
	"jump rope", "sled pushes", "yoga class", "mobility session",
}

// Task titles are a verb and an object of the same kind, optionally with a
// qualifier.
var taskKinds = []struct {
	verbs   []string
	objects []string
}{
	{ // work
		[]string{"Ship", "Fix", "Refactor", "Review", "Migrate", "Document", "Test", "Deploy", "Benchmark",
			"Design", "Clean up", "Automate", "Update", "Debug", "Prototype"},
		[]string{"invoice export", "sync tests", "onboarding flow", "billing dashboard", "search index",
			"API rate limits", "CI runners", "logging pipeline", "backup script", "payment retries",
			"webhook handler", "customer import", "cache layer", "feature flags", "mobile layout",
			"email templates", "metrics dashboard", "database migration", "auth tokens", "PDF renderer",
			"currency rounding", "audit log", "admin panel", "support macros", "cron jobs", "docker images",
			"TLS certificates", "DNS records", "load test", "pricing page", "error budget", "on-call runbook"},
	},
	{ // writing
		[]string{"Write", "Draft", "Finish", "Prepare", "Review", "Outline"},
		[]string{"quarterly report", "release notes", "design doc", "retro notes", "conference talk",
			"interview questions", "team update", "year review", "blog post", "performance review"},
	},
	{ // errands and admin
		[]string{"Book", "Renew", "Call about", "Sort out", "Schedule", "Cancel", "Decide on", "Pay"},
		[]string{"passport", "dentist appointment", "tax return", "car insurance", "lease renewal",
			"gym membership", "bike service", "flight to Seoul", "birthday dinner", "haircut",
			"eye exam", "phone plan", "physio appointment", "vet visit", "train tickets"},
	},
	{ // things to buy or fix at home
		[]string{"Order", "Buy", "Return", "Replace", "Set up", "Fix"},
		[]string{"garage shelves", "standing desk", "fractional plates", "lifting belt", "running shoes",
			"home network", "photo backup", "desk lamp", "blender", "wedding gift", "bike light", "pull-up bar"},
	},
	{ // training and health
		[]string{"Plan", "Start", "Finish", "Review", "Track", "Set up"},
		[]string{"training block", "meal plan", "deload week", "sleep tracker", "deadlift form check",
			"mobility routine", "protein targets", "conditioning block", "bench progression", "caffeine cut-off"},
	},
}

var taskQualifiers = []string{
	"for Acme", "before launch", "v2", "properly", "again", "for Q1", "for Q3", "at home",
	"for the team", "this time", "before the trip", "for mobile",
}

var estimates = []string{"30m", "45m", "90m", "1h", "2h", "3h", "4h", "1d", "2d", "0.5d"}

var checklistVerbs = []string{
	"Write", "Check", "Ask", "Email", "Test", "Fix", "Draft", "Review", "Measure", "Order",
	"Compare", "Call", "Update", "Try", "Merge", "Deploy", "Read", "Sketch", "Book", "Clean",
}

var referenceAreas = []struct {
	folder string
	subs   []string
}{
	{"Reference/Training", []string{"Programs", "Exercises", "Mobility", ""}},
	{"Reference/Nutrition", []string{"Recipes", "Supplements", ""}},
	{"Reference/Health", []string{"Sleep", "Injuries", ""}},
	{"Reference/Work/Projects", []string{"Billing", "Platform", "Archive", ""}},
	{"Reference/Work/Meetings", []string{"1-1s", "Retros", ""}},
	{"Reference/People", []string{""}},
	{"Reference/Books", []string{"Fiction", "Non-fiction", ""}},
	{"Reference/Places", []string{""}},
	{"Notes", []string{"Ideas", "Tech", "Journal prompts", ""}},
}

var adjectives = []string{
	"slow", "quiet", "heavy", "careful", "simple", "honest", "long", "small", "strange", "useful",
	"broken", "hidden", "steady", "cheap", "early", "late", "clear", "rough", "gentle", "sharp",
	"boring", "patient", "tired", "stubborn", "practical", "deep", "narrow", "lucky", "lazy", "good",
}

// topicNouns is ordered roughly by how often a person would write each word;
// it is sampled with a Zipf distribution over its index.
var topicNouns = strings.Fields(`
work sleep coffee gym plan week meeting team code bug review weekend project deadline
energy protein dinner lunch email family walk weather habit routine focus budget book
release doc test deploy customer invoice data shoulder knee back stretch recovery
music podcast phone laptop apartment kitchen groceries rent car train bike garden
friend cousin manager standup retro roadmap backlog ticket estimate priority scope
calendar schedule trip flight hotel passport visa birthday gift party movie series
running cardio conditioning mobility warmup deload program cycle volume intensity
calories carbs fat fiber water caffeine alcohol sugar vegetables fruit rice chicken
stress anxiety mood motivation patience burnout gratitude journaling meditation
notes writing reading article paper talk conference interview hiring feedback salary
database query index cache queue migration schema latency throughput outage incident
alert dashboard metric logging tracing config secret certificate container cluster
pipeline runner branch merge commit refactor library dependency upgrade version
invoice payment refund currency tax ledger report export import spreadsheet chart
sunlight evening morning afternoon night alarm nap bedtime screen blanket pillow
posture grip chalk belt shoes barbell plates rack bench platform mirror chalkbox
physio massage foam roller hamstring glute hip ankle wrist elbow neck tendon
breakfast snack shake oats eggs yogurt berries beans lentils tofu salmon steak
vacation holiday neighbour landlord plumber dentist doctor pharmacy appointment
insurance taxes savings mortgage subscription invoice bill receipt warranty
sourdough kimchi ramen dumplings curry bibimbap tacos pasta salad soup stew
guitar piano chess puzzle crossword painting photography camera lens film
monitor keyboard mouse headphones charger cable router printer backup drive
hypothesis experiment tradeoff principle heuristic pattern model framework lesson
winter spring summer autumn rain snow fog wind heatwave storm frost
parquet protobuf kafka grpc terraform kubernetes postgres sqlite redis nginx
goldmark fsnotify tokenizer embedding quantization transformer ollama
solstice equinox fjord glacier archipelago tundra savanna monsoon
cardamom saffron tamarind gochujang sumac miso tahini furikake
`)

// rareSyllables build made-up names (project codenames, places in novels,
// internal tools): each occurs in only a few notes, the rare end of the
// vocabulary that keyword search must still find.
var rareSyllables = []string{
	"ka", "lo", "mi", "ren", "tu", "vos", "zen", "quil", "dra", "bex", "no", "sha", "tor", "vel",
	"ari", "om", "pex", "rud", "sil", "tha", "ur", "wyn", "yar", "zo", "cal", "dun", "fen", "gri",
	"hal", "jor",
}

// rareTerm returns the k-th made-up name; distinct k give distinct names.
func rareTerm(k int) string {
	n := len(rareSyllables)
	// Scatter k so neighbouring ranks share no syllables; 7919 is prime to n³.
	k = (k*7919 + 4021) % (n * n * n)
	s := rareSyllables[k%n] + rareSyllables[(k/n)%n] + rareSyllables[(k/(n*n))%n]
	return strings.ToUpper(s[:1]) + s[1:]
}

var bookPatterns = []string{
	"The %s %s", "On %s", "A Short History of %s", "The Art of %s", "%s and %s", "Notes on %s",
	"Why %s Matters", "The %s Problem", "Against %s", "In Praise of %s",
}

var foreignLines = []string{
	"오늘은 조금 피곤했다. 그래도 할 일은 다 했다.",
	"내일 아침 일찍 일어나기.",
	"Heute war es ruhig, endlich mal Zeit zum Nachdenken.",
	"Nicht vergessen: Termin verschieben.",
	"今日は雨。ジムは休み。",
	"Hoy dormí mal, pero el entrenamiento salió bien.",
}

var emojis = []string{"💪", "🙃", "✨", "🔥", "😴", "🍜", "📦", "🎉", "🤔", "☕"}

var weekdays = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
