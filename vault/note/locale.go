package note

import (
	"regexp"
	"strings"
	"time"
)

// Locale is how moment.js writes dates in one of the languages Obsidian
// runs in: month and weekday names, ordinals and weeks. Obsidian formats a
// daily note's name in the app's language, so a Korean vault's `MMM` is
// "11월" and a German one's "Nov.". The values are moment 2.29's locale
// files, the version Obsidian ships.
type Locale struct {
	Name string
	// months and monthsShort are the standalone forms; monthsOf and
	// monthsShortOf the forms moment uses after a day ("D MMMM"), where a
	// language declines the month (Russian's genitive), else nil.
	months, monthsOf           []string
	monthsShort, monthsShortOf []string
	// monthsShortDashed is Spanish's MMM between dashes ("-MMM-"), which
	// moment writes without the abbreviation's dot.
	monthsShortDashed []string
	// weekdaysOf is the declined weekday moment uses when the format
	// matches weekdaysOfRE (Russian's accusative after "в").
	weekdays, weekdaysOf       []string
	weekdaysOfRE               *regexp.Regexp
	weekdaysShort, weekdaysMin []string
	// ordinal is what follows a number with "o" after its token
	// (D for Do, M for Mo, …); "" for none.
	ordinal func(n int, tok string) string
	// dow is the first day of the week (0 Sunday) and doy sets week 1:
	// it holds January 7+dow-doy.
	dow, doy int
}

func split(s string) []string { return strings.Split(s, "_") }

// English is moment's default locale, and Obsidian's.
var English = &Locale{
	Name:          "en",
	months:        split("January_February_March_April_May_June_July_August_September_October_November_December"),
	monthsShort:   split("Jan_Feb_Mar_Apr_May_Jun_Jul_Aug_Sep_Oct_Nov_Dec"),
	weekdays:      split("Sunday_Monday_Tuesday_Wednesday_Thursday_Friday_Saturday"),
	weekdaysShort: split("Sun_Mon_Tue_Wed_Thu_Fri_Sat"),
	weekdaysMin:   split("Su_Mo_Tu_We_Th_Fr_Sa"),
	ordinal:       func(n int, _ string) string { return ordinalSuffix(n) },
	dow:           0, doy: 6,
}

// cjkOrdinal is moment's ordinal for Korean and Chinese: the unit of the
// number (day, month, week) follows it, and only for those tokens.
func cjkOrdinal(day, month, week string) func(int, string) string {
	return func(_ int, tok string) string {
		switch tok {
		case "d", "D", "DDD":
			return day
		case "M":
			return month
		case "w", "W":
			return week
		}
		return ""
	}
}

// locales are the languages margin reads daily notes in, English first:
// inference prefers the earlier of two that read as many notes.
var locales = []*Locale{
	English,
	{
		Name:          "ko",
		months:        split("1월_2월_3월_4월_5월_6월_7월_8월_9월_10월_11월_12월"),
		monthsShort:   split("1월_2월_3월_4월_5월_6월_7월_8월_9월_10월_11월_12월"),
		weekdays:      split("일요일_월요일_화요일_수요일_목요일_금요일_토요일"),
		weekdaysShort: split("일_월_화_수_목_금_토"),
		weekdaysMin:   split("일_월_화_수_목_금_토"),
		ordinal:       cjkOrdinal("일", "월", "주"),
		dow:           0, doy: 6,
	},
	{
		Name:          "ja",
		months:        split("1月_2月_3月_4月_5月_6月_7月_8月_9月_10月_11月_12月"),
		monthsShort:   split("1月_2月_3月_4月_5月_6月_7月_8月_9月_10月_11月_12月"),
		weekdays:      split("日曜日_月曜日_火曜日_水曜日_木曜日_金曜日_土曜日"),
		weekdaysShort: split("日_月_火_水_木_金_土"),
		weekdaysMin:   split("日_月_火_水_木_金_土"),
		ordinal:       cjkOrdinal("日", "", ""),
		dow:           0, doy: 6,
	},
	{
		Name:          "zh-cn",
		months:        split("一月_二月_三月_四月_五月_六月_七月_八月_九月_十月_十一月_十二月"),
		monthsShort:   split("1月_2月_3月_4月_5月_6月_7月_8月_9月_10月_11月_12月"),
		weekdays:      split("星期日_星期一_星期二_星期三_星期四_星期五_星期六"),
		weekdaysShort: split("周日_周一_周二_周三_周四_周五_周六"),
		weekdaysMin:   split("日_一_二_三_四_五_六"),
		ordinal:       cjkOrdinal("日", "月", "周"),
		dow:           1, doy: 4,
	},
	{
		Name:          "de",
		months:        split("Januar_Februar_März_April_Mai_Juni_Juli_August_September_Oktober_November_Dezember"),
		monthsShort:   split("Jan._Feb._März_Apr._Mai_Juni_Juli_Aug._Sep._Okt._Nov._Dez."),
		weekdays:      split("Sonntag_Montag_Dienstag_Mittwoch_Donnerstag_Freitag_Samstag"),
		weekdaysShort: split("So._Mo._Di._Mi._Do._Fr._Sa."),
		weekdaysMin:   split("So_Mo_Di_Mi_Do_Fr_Sa"),
		ordinal:       func(int, string) string { return "." },
		dow:           1, doy: 4,
	},
	{
		Name:          "fr",
		months:        split("janvier_février_mars_avril_mai_juin_juillet_août_septembre_octobre_novembre_décembre"),
		monthsShort:   split("janv._févr._mars_avr._mai_juin_juil._août_sept._oct._nov._déc."),
		weekdays:      split("dimanche_lundi_mardi_mercredi_jeudi_vendredi_samedi"),
		weekdaysShort: split("dim._lun._mar._mer._jeu._ven._sam."),
		weekdaysMin:   split("di_lu_ma_me_je_ve_sa"),
		ordinal: func(n int, tok string) string {
			switch {
			case tok == "D" && n == 1:
				return "er"
			case tok == "D":
				return ""
			case n == 1 && (tok == "w" || tok == "W"):
				return "re"
			case n == 1:
				return "er"
			}
			return "e"
		},
		dow: 1, doy: 4,
	},
	{
		Name:              "es",
		months:            split("enero_febrero_marzo_abril_mayo_junio_julio_agosto_septiembre_octubre_noviembre_diciembre"),
		monthsShort:       split("ene._feb._mar._abr._may._jun._jul._ago._sep._oct._nov._dic."),
		monthsShortDashed: split("ene_feb_mar_abr_may_jun_jul_ago_sep_oct_nov_dic"),
		weekdays:          split("domingo_lunes_martes_miércoles_jueves_viernes_sábado"),
		weekdaysShort:     split("dom._lun._mar._mié._jue._vie._sáb."),
		weekdaysMin:       split("do_lu_ma_mi_ju_vi_sá"),
		ordinal:           func(int, string) string { return "º" },
		dow:               1, doy: 4,
	},
	{
		Name:          "ru",
		months:        split("январь_февраль_март_апрель_май_июнь_июль_август_сентябрь_октябрь_ноябрь_декабрь"),
		monthsOf:      split("января_февраля_марта_апреля_мая_июня_июля_августа_сентября_октября_ноября_декабря"),
		monthsShort:   split("янв._февр._март_апр._май_июнь_июль_авг._сент._окт._нояб._дек."),
		monthsShortOf: split("янв._февр._мар._апр._мая_июня_июля_авг._сент._окт._нояб._дек."),
		weekdays:      split("воскресенье_понедельник_вторник_среда_четверг_пятница_суббота"),
		weekdaysOf:    split("воскресенье_понедельник_вторник_среду_четверг_пятницу_субботу"),
		weekdaysOfRE:  regexp.MustCompile(`\[ ?[Вв] ?(?:прошлую|следующую|эту)? ?\] ?dddd`),
		weekdaysShort: split("вс_пн_вт_ср_чт_пт_сб"),
		weekdaysMin:   split("вс_пн_вт_ср_чт_пт_сб"),
		ordinal: func(_ int, tok string) string {
			switch tok {
			case "M", "d", "DDD":
				return "-й"
			case "D":
				return "-го"
			case "w", "W":
				return "-я"
			}
			return ""
		},
		dow: 1, doy: 4,
	},
}

// LookupLocale finds a locale by its moment.js name, as Obsidian's
// language setting gives it ("ko", "zh-cn"; "zh" is Simplified Chinese),
// in any case.
func LookupLocale(name string) (*Locale, bool) {
	name = strings.ToLower(strings.TrimSpace(strings.ReplaceAll(name, "_", "-")))
	switch name {
	case "", "en-us", "en-gb":
		return English, true
	case "zh", "zh-hans":
		name = "zh-cn"
	}
	for _, l := range locales {
		if l.Name == name {
			return l, true
		}
	}
	return nil, false
}

// LocaleNames are the locales margin knows, English first.
func LocaleNames() []string {
	out := make([]string, len(locales))
	for i, l := range locales {
		out[i] = l.Name
	}
	return out
}

// Locales are the locales margin knows, English first.
func Locales() []*Locale { return locales }

// FirstWeekday is the day the locale's weeks start on.
func (l *Locale) FirstWeekday() time.Weekday { return time.Weekday(l.dow) }

// monthsIn is MONTHS_IN_FORMAT of moment: a month written after a day
// takes the declined form.
var monthsIn = regexp.MustCompile(`D[oD]?(\[[^\[\]]*\]|\s)+MMMM?`)

// names are the month (MMMM, MMM) or weekday (dddd, ddd, dd) names tok
// writes in a format whose source is src.
func (l *Locale) names(tok, src string) []string {
	declined := func(forms, of []string) []string {
		if of != nil && monthsIn.MatchString(src) {
			return of
		}
		return forms
	}
	switch tok {
	case "MMMM":
		return declined(l.months, l.monthsOf)
	case "MMM":
		if l.monthsShortDashed != nil && strings.Contains(src, "-MMM-") {
			return l.monthsShortDashed
		}
		return declined(l.monthsShort, l.monthsShortOf)
	case "dddd":
		if l.weekdaysOfRE != nil && l.weekdaysOfRE.MatchString(src) {
			return l.weekdaysOf
		}
		return l.weekdays
	case "ddd":
		return l.weekdaysShort
	case "dd":
		return l.weekdaysMin
	}
	return nil
}
