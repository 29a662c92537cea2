module tunnelgw.test/goclient

go 1.25

require github.com/ngrok/ngrok-api-go/v9 v9.0.0
