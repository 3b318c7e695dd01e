package toolsearch

import (
	"regexp"
	"slices"
	"strings"
)

// A queryTerm is a term to look up and how much it counts.
type queryTerm struct {
	term    string
	weight  float64
	concept int // index of the query word it stands for
	// boost multiplies the term's score for a word the query repeats.
	boost float64
}

// queryTerms returns the terms of query: its own, once each (a word the
// query repeats weighs 1+repeat for each repetition, as BM25's query
// term frequency), then their synonyms, weighing synonym (none when it
// is 0). The query is cut to MaxQueryBytes and MaxQueryTerms words.
func queryTerms(query string, synonym, repeat float64) []queryTerm {
	query = cutUTF8(query, MaxQueryBytes)
	words := appendTerms(nil, query, MaxQueryTerms)
	if namesFile(query) && !slices.Contains(words, "file") {
		words = append(words, "file")
	}
	q := make([]queryTerm, 0, 2*len(words))
	seen := make(map[string]int, 2*len(words))
	for _, w := range words {
		if i, ok := seen[w]; ok {
			q[i].boost += repeat
		} else {
			seen[w] = len(q)
			q = append(q, queryTerm{w, 1, len(q), 1})
		}
	}
	concepts := len(q)
	for c := range concepts {
		if synonym == 0 {
			break
		}
		for _, s := range synonyms[q[c].term] {
			if _, ok := seen[s]; !ok {
				seen[s] = len(q)
				q = append(q, queryTerm{s, synonym, c, q[c].boost})
			}
		}
	}
	return q
}

// fileName matches a word that looks like the name of a file, such as
// notes.txt or main.go, and captures its extension.
var fileName = regexp.MustCompile(`[\pL\pN_-]\.([a-z0-9]{1,4})\b`)

// notFileExtensions are endings of host names.
var notFileExtensions = setOf("com org net io dev gov edu co uk de fr ai app")

// namesFile reports whether query names a file (notes.txt, main.go): the
// tool it asks for likely deals with files.
func namesFile(query string) bool {
	for _, m := range fileName.FindAllStringSubmatch(query, 8) {
		if !notFileExtensions[m[1]] {
			return true
		}
	}
	return false
}

// synonymGroups are words that people use for the same thing when they
// ask for a tool. Each line is a group; every word stands for the others.
// Words are stemmed as the index stems them.
const synonymGroups = `
delete remove erase destroy drop trash purge discard wipe cancel
create make add new insert
find search lookup locate query look seek
get fetch retrieve read show view obtain load display
list enumerate browse
update edit modify change alter patch
send post deliver share
message chat dm
email mail inbox
file document doc
folder directory dir
content contain inside body
save store persist keep set put
download save fetch
navigate open visit go goto
percent calculate
size big large bytes
modified changed timestamp
repo repository codebase
author wrote blame
undo revert reset unstage rollback
pr pull
issue ticket bug defect crash
comment reply note remark
propose suggest
ci build pipeline workflow job check
pass green succeed status
output log trace stdout
emoji reaction react thumbs
recent latest lately history
workspace team organization member
status presence away busy
draft compose prepare
archive label
forward filter rule
attachment attached
calendar schedule agenda
event meeting appointment standup invitation invite
available free slot
spreadsheet sheet excel
permission access role
numbers values cells
end append bottom
wiki confluence knowledge documentation
done complete finish resolve transition tick
hours worklog spent
assign assignee give owner
task todo item
due deadline overdue
board column kanban
columns schema describe fields structure
slow performance explain plan
count aggregate sum group total
cache redis
embedding vector similar nearest semantic
weather forecast temperature rain climate cold hot warm storm snow wind
warning alert severe
sun sunrise sunset dusk dawn
past historical previous
stock share equity ticker trading market
price quote cost cheapest cheap
exchange convert conversion currency dollar yen euro usd eur money
payment pay charge refund checkout
back refund return
invoice bill unpaid outstanding
coordinates latitude longitude geocode
location place address
directions route navigate drive driving commute travel distance
elevation altitude height high mountain
server instance machine vm host
stop halt kill terminate shut
cost spend billing usage
preview plan dry
dns domain ip hostname www record
error exception failure sentry
oncall pager
outage incident downtime
terminal shell command bash console
time clock hour timezone
calculate math arithmetic compute percent
unique identifier uuid guid
roll dice random
remember memory knowledge observation fact
flight airline plane fly
hotel lodging accommodation stay night room
food meal dish sushi pizza cuisine delivery delivered
inventory stock units quantity
image photo picture draw
pixels dimensions width resize
speech voice audio aloud speak spoken
recording transcribe transcript
contact lead prospect crm
support ticket case complaint help
phone sms mobile text
call ring dial phone
subscribe subscriber newsletter audience
summary summarize gist
receipt scan ocr recognize
typos spelling grammar spell
length long count words
news headline article happening
medical biomedical health medicine clinical
papers research study literature scientific
trending top popular
thermostat heating degrees warmer
state door garage sensor device
light lamp switch
video zoom meeting conference
browser web webpage website site page url online internet
screenshot capture
click press tap button
type enter fill field form input
select option choose dropdown pick
javascript js script
encyclopedia wikipedia
run execute exec launch
user account member person people
song music track jazz
translate translation
compress zip archive
extract unzip unpack
diff difference compare changed
commit snapshot version
apply port cherry
problem issue bug
review reviewer approve approval
ping notify alert
everyone member user
colleague team group
decline accept respond rsvp invite
figures numbers data values
status state progress
remind reminder todo task
signup register registration
collection table
article page text scrape crawl extract
current latest live present
pound gbp sterling currency
ethereum eth crypto coin
walking walk bike cycling transit directions
tail log output
manifest yaml deploy apply
alerting monitor alert
multiply times plus divide calculate
train rail railway station
resume play start
talk lecture video
language translate translation
`

// synonyms maps a term to the other terms of its groups.
var synonyms = func() map[string][]string {
	m := make(map[string][]string)
	for _, line := range strings.Split(synonymGroups, "\n") {
		var terms []string
		for _, w := range strings.Fields(line) {
			if t := term(w); t != "" {
				terms = append(terms, t)
			}
		}
		for _, t := range terms {
			for _, o := range terms {
				if o != t {
					m[t] = append(m[t], o)
				}
			}
		}
	}
	return m
}()
